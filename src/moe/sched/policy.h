// A Policy decides, as each layer's routing becomes known, where every active expert runs (device
// or host), what to prefetch for later layers, and which expert leaves the device when room is
// needed. One interface for the engine and the trace replay (and later PreScope's planner).
//
// Per layer, the caller does:  on_route -> (pins what is resident, calls on_access, starts demand
// loads) -> on_dispatched (prefetch here) -> compute -> on_layer_done;  on_step_done per forward.
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
  virtual std::string name() const = 0;
  // Called once before use (and again after the cache is reset).
  virtual void attach(const PolicyContext& ctx) { ctx_ = ctx; }
  // Decide where each active expert runs (placement has one entry per route.experts, preset to kDevice).
  virtual void on_route(const RouteInfo& route, std::span<Placement> placement) = 0;
  // An expert placed on the device is used; hit = it was resident or on its way.
  virtual void on_access(ExpertId id, bool hit) {}
  // Demand loads of this layer are queued and its experts pinned: the moment to prefetch.
  virtual void on_dispatched(const RouteInfo& route) {}
  virtual void on_layer_done(int layer) {}
  virtual void on_step_done() {}
  // EvictionAdvisor: default is least recently accessed.
  ExpertId choose_victim(std::span<const ExpertId> candidates, ExpertId incoming) override;

 protected:
  std::uint64_t tick_ = 0;
  std::vector<std::uint64_t> last_use_;  // [layer * E + e] -> tick of the last access (0 = never)
  void touch(ExpertId id);
  std::uint64_t last_use(ExpertId id) const;
  PolicyContext ctx_;
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
