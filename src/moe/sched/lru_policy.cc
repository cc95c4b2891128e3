// LRU expert cache (mixtral-offloading, Eliseev & Mazur 2023): experts stay on the device after
// use; when room is needed the least recently used one leaves. Scope "global": one LRU over all
// layers; scope "layer": each layer keeps at most slots / layers experts, evicting within itself.
#include "moe/sched/lru_policy.h"

#include <algorithm>

#include "moe/sched/builtin_policies.h"
#include "moe/sched/prefetch_room.h"

namespace ferry::moe {

LruOptions parse_lru_options(SpecReader& spec) {
  const bool layer = spec.get_choice("scope", "global", {"global", "layer"}) == "layer";
  return {.scope = layer ? LruScope::kLayer : LruScope::kGlobal};
}

LruPolicy::LruPolicy(LruOptions options) : per_layer_(options.scope == LruScope::kLayer) {}

void LruPolicy::attach(const PolicyContext& ctx) {
  ctx_ = ctx;
  recency_.set_shape(ctx.num_layers, ctx.num_experts);
}

void LruPolicy::on_access(ExpertId id, bool hit) {
  recency_.touch(id);
  if (!per_layer_ || hit) return;
  // Per-layer scope: a miss makes room inside its own layer before it is loaded, so that no
  // layer ever holds more than its quota (the hits of this layer are pinned already).
  if (id.layer != pending_layer_) {
    pending_layer_ = id.layer;
    pending_ = 0;
  }
  ++pending_;
  const std::uint64_t quota = std::max<std::uint64_t>(1, ctx_.cache->capacity_slots() / ctx_.num_layers);
  const VictimRule same_layer{[](ExpertId c, ExpertId incoming) { return c.layer == incoming.layer; },
                              [this](std::span<const ExpertId> c, ExpertId) { return recency_.least_recent(c); }};
  for (;;) {
    std::uint64_t held = 0;
    for (int e = 0; e < ctx_.num_experts; ++e) held += ctx_.cache->contains({id.layer, e});
    if (held + pending_ <= quota) break;
    const std::optional<ExpertId> victim = find_victim(*ctx_.cache, same_layer, id);
    if (!victim) break;
    ctx_.cache->evict(*victim);
  }
}

void LruPolicy::on_layer_done(int) { pending_ = 0; }

ExpertId LruPolicy::choose_victim(std::span<const ExpertId> candidates, ExpertId incoming) {
  if (per_layer_) {
    const std::uint64_t quota = std::max<std::uint64_t>(1, ctx_.cache->capacity_slots() / ctx_.num_layers);
    std::vector<ExpertId> same;
    for (ExpertId id : candidates)
      if (id.layer == incoming.layer) same.push_back(id);
    std::uint64_t held = 0;
    for (int e = 0; e < ctx_.num_experts; ++e) held += ctx_.cache->contains({incoming.layer, e});
    if (!same.empty() && held >= quota) return recency_.least_recent(same);
  }
  return recency_.least_recent(candidates);
}

PolicyEntry lru_policy_entry() {
  return {.name = "lru",
          .summary = "least-recently-used expert cache",
          .keys = {{"scope", "global/layer"}},
          .make = [](SpecReader& spec, const PolicyInputs&) -> std::unique_ptr<Policy> {
            return std::make_unique<LruPolicy>(parse_lru_options(spec));
          }};
}

}  // namespace ferry::moe
