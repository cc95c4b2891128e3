#include "moe/sched/policy.h"

#include <algorithm>
#include <map>
#include <mutex>

#include "core/error.h"

namespace ferry::moe {

std::unique_ptr<Policy> make_ondemand_policy(const PolicyOptions&);
std::unique_ptr<Policy> make_lru_policy(const PolicyOptions&);
std::unique_ptr<Policy> make_static_hot_policy(const PolicyOptions&);
std::unique_ptr<Policy> make_next_gate_policy(const PolicyOptions&);
std::unique_ptr<Policy> make_fiddler_policy(const PolicyOptions&);
std::unique_ptr<Policy> make_moe_infinity_policy(const PolicyOptions&);
std::unique_ptr<Policy> make_prescope_policy(const PolicyOptions&);
std::unique_ptr<Policy> make_oracle_policy(const PolicyOptions&);

namespace {
std::mutex& registry_mutex() {
  static std::mutex mu;
  return mu;
}
std::map<std::string, PolicyFactory>& registry() {
  static std::map<std::string, PolicyFactory> r;
  return r;
}
}  // namespace

std::vector<ExpertId> hottest_experts(const PolicyContext& ctx, const std::vector<std::uint64_t>& counts,
                                      std::uint64_t slots) {
  std::vector<ExpertId> all;
  for (int e = 0; e < ctx.num_experts; ++e)
    for (int l = 0; l < ctx.num_layers; ++l) all.push_back({l, e});  // layer-interleaved: even spread on ties
  auto count = [&](ExpertId id) -> std::uint64_t {
    const std::size_t k = static_cast<std::size_t>(id.layer) * ctx.num_experts + id.expert;
    return k < counts.size() ? counts[k] : 0;
  };
  std::stable_sort(all.begin(), all.end(), [&](ExpertId a, ExpertId b) { return count(a) > count(b); });
  if (all.size() > slots) all.resize(slots);
  return all;
}

void register_policy(const std::string& name, PolicyFactory factory) {
  std::lock_guard lock(registry_mutex());
  registry()[name] = std::move(factory);
}

void register_builtin_policies() {
  register_policy("ondemand", make_ondemand_policy);
  register_policy("lru", make_lru_policy);
  register_policy("static-hot", make_static_hot_policy);
  register_policy("next-gate", make_next_gate_policy);
  register_policy("fiddler", make_fiddler_policy);
  register_policy("moe-infinity", make_moe_infinity_policy);
  register_policy("prescope", make_prescope_policy);
  register_policy("oracle", make_oracle_policy);
}

std::unique_ptr<Policy> make_policy(const std::string& name, const PolicyOptions& options) {
  PolicyFactory f;
  {
    std::lock_guard lock(registry_mutex());
    auto it = registry().find(name);
    if (it == registry().end()) {
      std::string known;
      for (const auto& [k, v] : registry()) known += (known.empty() ? "" : ", ") + k;
      FERRY_THROW(InvalidArgument, "unknown policy '", name, "' (known: ", known, ")");
    }
    f = it->second;
  }
  return f(options);
}

std::vector<std::string> policy_names() {
  std::lock_guard lock(registry_mutex());
  std::vector<std::string> out;
  for (const auto& [k, v] : registry()) out.push_back(k);
  return out;
}

}  // namespace ferry::moe
