#include "moe/sched/prefetch_room.h"

#include <algorithm>

namespace ferry::moe {

std::optional<ExpertId> find_victim(const ExpertCache& cache, const VictimRule& rule, ExpertId incoming) {
  std::vector<ExpertId> candidates = cache.evictable();
  if (rule.may_leave)
    std::erase_if(candidates, [&](ExpertId id) { return !rule.may_leave(id, incoming); });
  if (candidates.empty()) return std::nullopt;
  return rule.pick(candidates, incoming);
}

std::size_t prefetch_with_room(ExpertCache& cache, std::span<const PrefetchWant> wants, const VictimRule& rule,
                               const std::function<void(ExpertId)>& on_queued) {
  std::size_t queued = 0;
  for (const PrefetchWant& want : wants) {
    if (cache.contains(want.id)) continue;
    while (cache.free_slots() == 0) {
      const std::optional<ExpertId> victim = find_victim(cache, rule, want.id);
      if (!victim || !cache.evict(*victim)) return queued;
    }
    if (!cache.prefetch(want.id, want.priority)) continue;
    ++queued;
    if (on_queued) on_queued(want.id);
  }
  return queued;
}

std::vector<ExpertId> prefetch_hottest(const PolicyContext& ctx, const std::vector<std::uint64_t>& counts,
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
  for (ExpertId id : all) ctx.cache->prefetch(id, kPriorityPrefetch + id.layer);
  return all;
}

}  // namespace ferry::moe
