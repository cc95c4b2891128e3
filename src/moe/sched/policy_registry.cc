// The policy registry (policy.h): the builtin policies' entries (builtin_policies.h), each with its
// spec keys and capabilities, and the lookups.
#include <algorithm>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/registry.h"
#include "core/registry_names.h"
#include "moe/sched/builtin_policies.h"
#include "moe/trace/future_routing.h"

namespace ferry::moe {

namespace {

Registry<PolicyEntry>& registry() {
  static Registry<PolicyEntry> r("policy");
  return r;
}

}  // namespace

void register_policy(PolicyEntry entry) {
  FERRY_CHECK(entry.make != nullptr, "policy '", entry.name, "' has no factory");
  registry().add(std::move(entry));
}

void register_policy(const std::string& name, PolicyFactory factory) {
  register_policy(PolicyEntry{.name = name,
                              .summary = "",
                              .make = [factory = std::move(factory)](SpecReader& spec, const PolicyInputs& inputs) {
                                spec.finish();
                                return factory(inputs);
                              }});
}

void register_builtin_policies() {
  auto& r = registry();
  for (auto entry : {ondemand_policy_entry, lru_policy_entry, static_hot_policy_entry, next_gate_policy_entry,
                     fiddler_policy_entry, moe_infinity_policy_entry, prescope_policy_entry,
                     prescope_perfect_policy_entry, oracle_policy_entry})
    r.add_if_absent(entry());
}

std::unique_ptr<Policy> make_policy(const std::string& spec, const PolicyInputs& inputs) {
  register_builtin_policies();
  auto [entry, reader] = registry().parse(spec);
  std::unique_ptr<Policy> policy = entry->make(reader, inputs);
  reader.finish();
  return policy;
}

void check_policy_spec(const std::string& spec) {
  const FutureRouting none{};
  PolicyInputs inputs;
  inputs.future = &none;
  make_policy(spec, inputs);
}

const PolicyEntry& policy_entry(const std::string& spec) {
  register_builtin_policies();
  return registry().at(Spec::name_of(spec));
}

const PolicyEntry* find_policy(const std::string& name) {
  register_builtin_policies();
  return registry().find(name);
}

std::vector<std::string> policy_names() {
  register_builtin_policies();
  return registry().names();
}

std::string policy_usage(const std::string& name) {
  const PolicyEntry& entry = policy_entry(name);
  std::string usage = entry.name;
  for (std::size_t i = 0; i < entry.keys.size(); ++i)
    usage += (i == 0 ? "[:" : ",") + entry.keys[i].name + "=" + entry.keys[i].values;
  return entry.keys.empty() ? usage : usage + "]";
}

std::vector<std::string> trace_policy_names() {
  register_builtin_policies();
  return names_where(registry(), [](const auto& e) { return !e.needs_routers; });
}

std::string with_policy_key(const std::string& spec, const std::string& key, const std::string& value) {
  const PolicyEntry* entry = find_policy(Spec::name_of(spec));
  const auto named = [&](const PolicyKey& k) { return k.name == key; };
  if (entry == nullptr || std::none_of(entry->keys.begin(), entry->keys.end(), named)) return spec;
  Spec s = Spec::parse(spec, "policy", entry->positional_key);
  if (std::any_of(s.params.begin(), s.params.end(), [&](const auto& kv) { return kv.first == key; })) return spec;
  s.params.emplace_back(key, value);
  return s.str();
}

std::string policy_label(const std::string& spec) {
  const Spec s = Spec::parse(spec, "policy", policy_entry(spec).positional_key);
  if (s.params.size() == 1 && s.params[0].first == "predictor") return s.name + "+" + Spec::name_of(s.params[0].second);
  return spec;
}

}  // namespace ferry::moe
