#include "moe/sched/policy.h"

#include <algorithm>

#include "core/error.h"

namespace ferry::moe {


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

}  // namespace ferry::moe
