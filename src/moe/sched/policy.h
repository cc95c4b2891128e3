// A Policy decides, as each layer's routing becomes known, where every active expert runs (device
// or host), what to prefetch for later layers, and which expert leaves the device when room is
// needed. A pure interface: the engine, the simulator and the trace replay call it only through
// the layer protocol (layer_protocol.h), at the steps its methods name. State a policy keeps
// (the context, recency: recency_tracker.h) is its own.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "moe/predict/predictor.h"
#include "moe/sched/cost_model.h"
#include "moe/store/expert_cache.h"

namespace ferry::moe {

struct FutureRouting;

enum class Placement { kDevice, kHost };

struct RouteInfo {
  int layer = 0;
  std::span<const int> experts;            // distinct experts active at this layer, ascending
  std::span<const int> tokens_per_expert;  // tokens routed to each of them
  const float* hidden = nullptr;           // residual stream entering the MoE, [num_tokens x hidden_size]; null in replay
  int num_tokens = 0;
  int hidden_size = 0;
};

struct PolicyContext {
  ExpertCache* cache = nullptr;          // the device cache (owned by the caller; outlives the policy's use)
  const RouterView* routers = nullptr;   // the model's routers (null in trace replay)
  int num_layers = 0;
  int num_experts = 0;
  int top_k = 0;
  CostModel cost;                        // link and compute times
};

struct PolicyOptions {
  std::string lru_scope = "global";          // lru / next-gate eviction: "global" or "layer" (quota = slots / layers)
  std::vector<std::uint64_t> expert_counts;  // static-hot, fiddler: routing counts [layer * E + e] of a calibration
                                             // run (empty: spread evenly over layers)
  int lookahead = 1;                         // next-gate: layers ahead to speculate
  int window = 3;                            // prescope, oracle: layers PreSched plans ahead
  // prescope: builds the predictor when the policy is attached; empty: next-gate from the model's
  // routers (none in trace replay and the simulator, where the caller must give one)
  std::function<std::unique_ptr<Predictor>(const PolicyContext&)> predictor;
  const FutureRouting* future = nullptr;     // oracle: the recorded routing to come (simulator, replay); outlives the policy
};

class Policy : public EvictionAdvisor {
 public:
  ~Policy() override = default;
  // The registered name, as reports print it.
  virtual std::string name() const = 0;
  // Before the first layer, and again after the device cache is reset: the cache, shape and costs.
  virtual void attach(const PolicyContext& ctx) = 0;
  // Step 1 (route): where each active expert runs; placement has one entry per route.experts, preset to kDevice.
  virtual void on_route(const RouteInfo& route, std::span<Placement> placement) = 0;
  // Step 3 (access), per device-placed expert once the hits are pinned; hit = resident or on its way.
  virtual void on_access(ExpertId id, bool hit) {}
  // Step 5 (dispatched): this layer's demand loads are queued and its experts pinned: prefetch here.
  virtual void on_dispatched(const RouteInfo& route) {}
  // Step 7 (layer done): the layer's experts have run and are unpinned.
  virtual void on_layer_done(int layer) {}
  // After the last layer of each forward (one step of the batch).
  virtual void on_step_done() {}
  // Step 4 (demand load), when the cache is full: which unpinned candidate leaves for `incoming`.
  ExpertId choose_victim(std::span<const ExpertId> candidates, ExpertId incoming) override = 0;
};

using PolicyFactory = std::function<std::unique_ptr<Policy>(const PolicyOptions&)>;
void register_policy(const std::string& name, PolicyFactory factory);
// ondemand, lru, static-hot, next-gate, fiddler, moe-infinity, prescope, oracle. Idempotent.
void register_builtin_policies();
// Throws InvalidArgument naming the unknown policy and listing the known ones.
std::unique_ptr<Policy> make_policy(const std::string& name, const PolicyOptions& options = {});
std::vector<std::string> policy_names();

// The `slots` experts with the highest calibration counts (ties and missing counts: spread
// evenly over layers), for static placements.
std::vector<ExpertId> hottest_experts(const PolicyContext& ctx, const std::vector<std::uint64_t>& counts,
                                      std::uint64_t slots);

}  // namespace ferry::moe
