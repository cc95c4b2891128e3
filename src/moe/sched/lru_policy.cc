// LRU expert cache (mixtral-offloading, Eliseev & Mazur 2023): experts stay on the device after
// use; when room is needed the least recently used one leaves. Scope "global": one LRU over all
// layers; scope "layer": each layer keeps at most slots / layers experts, evicting within itself.
#include <algorithm>

#include "core/error.h"
#include "moe/sched/lru_policy.h"

namespace ferry::moe {

LruPolicy::LruPolicy(const PolicyOptions& options) : per_layer_(options.lru_scope == "layer") {
  FERRY_REQUIRE(options.lru_scope == "global" || options.lru_scope == "layer", "invalid LRU scope '",
                options.lru_scope, "': expected global or layer");
}

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
  for (;;) {
    std::uint64_t held = 0;
    for (int e = 0; e < ctx_.num_experts; ++e) held += ctx_.cache->contains({id.layer, e});
    if (held + pending_ <= quota) break;
    std::vector<ExpertId> same;
    for (ExpertId c : ctx_.cache->evictable())
      if (c.layer == id.layer) same.push_back(c);
    if (same.empty()) break;
    ctx_.cache->evict(recency_.least_recent(same));
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

std::unique_ptr<Policy> make_lru_policy(const PolicyOptions& options) { return std::make_unique<LruPolicy>(options); }

}  // namespace ferry::moe
