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

#include "core/spec.h"
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

// Builds a policy's predictor once the model's shape is known (Policy::attach).
using PredictorFactory = std::function<std::unique_ptr<Predictor>(const PolicyContext&)>;

// What a policy is built from besides its spec keys: data only the caller has. A policy reads the
// fields its entry's capabilities name (PolicyEntry) and ignores the others. Its spec keys
// ("lru:scope=layer", "prescope:window=3,predictor=llapor:DIR") are its own options struct, read
// by its entry (e.g. LruOptions, PreScopeOptions).
struct PolicyInputs {
  std::vector<std::uint64_t> expert_counts;  // uses_counts: routing counts [layer * E + e] of a calibration run
                                             // (empty: spread evenly over layers)
  const FutureRouting* future = nullptr;     // needs_future: the recorded routing to come (simulator, replay);
                                             // outlives the policy
  // takes_predictor: the predictor when the spec names none (key predictor); empty: next-gate from
  // the model's routers (none in trace replay and the simulator, where the caller must give one).
  PredictorFactory predictor;
  // takes_predictor: wraps the predictor the policy ends up with, from the spec, `predictor` or
  // next-gate on the model's routers (the engine times it this way); empty: no wrapper.
  std::function<std::unique_ptr<Predictor>(std::unique_ptr<Predictor>)> wrap_predictor;
};

// What a planning policy's planner cost (prescope, oracle), for the report that its run time is a
// small part of a layer. Zero for policies that do not plan.
struct PlanTiming {
  std::uint64_t plans = 0;
  double solve_s = 0;           // thread CPU time building the window and solving it, summed
  std::uint64_t states = 0;     // DP states expanded, summed
  std::uint64_t prefetches = 0; // prefetches the plans issued
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
  // The planner's cost so far (a capability query: zeros unless the policy plans).
  virtual PlanTiming plan_timing() const { return {}; }
  // Step 4 (demand load), when the cache is full: which unpinned candidate leaves for `incoming`.
  ExpertId choose_victim(std::span<const ExpertId> candidates, ExpertId incoming) override = 0;
};

using PolicyFactory = std::function<std::unique_ptr<Policy>(const PolicyInputs&)>;

// One spec key of a policy, for help texts.
struct PolicyKey {
  std::string name;    // "scope"
  std::string values;  // what it takes: "global/layer", "1..64", "SPEC"
};

// A policy's registry entry (core/registry.h): capabilities are data, asked instead of names.
struct PolicyEntry {
  std::string name;
  std::string summary;                   // one line for help texts
  std::vector<PolicyKey> keys = {};      // the spec keys `make` reads, in the order it reads them
  std::string positional_key = {};       // prescope: "predictor", so "prescope:llapor:DIR" works
  bool takes_predictor = false;          // uses PolicyInputs::predictor (spec key predictor=SPEC)
  bool needs_future = false;             // needs PolicyInputs::future (simulator, replay only)
  bool is_bound = false;                 // knows the future: the bound other policies are reported against
  bool needs_routers = false;            // reads the model's routers (PolicyContext::routers): not in a trace
  bool uses_counts = false;              // reads PolicyInputs::expert_counts (calibration routing counts)
  // Reads the policy's options from its spec keys (its own options struct and reader, in its own
  // file; absent keys keep their defaults), then builds it from them and `inputs`.
  std::function<std::unique_ptr<Policy>(SpecReader& spec, const PolicyInputs& inputs)> make = {};
};

// Adds a policy to the process's registry; InvalidArgument if the name is taken.
void register_policy(PolicyEntry entry);
// The same for a policy that takes no spec keys.
void register_policy(const std::string& name, PolicyFactory factory);
// ondemand, lru, static-hot, next-gate, fiddler, moe-infinity, prescope, prescope-perfect, oracle. Idempotent.
void register_builtin_policies();
// Builds the policy of `spec` ("lru", "lru:scope=layer", ...) from its keys and `inputs`. Throws
// InvalidArgument naming an unknown policy (listing the known ones), an unknown key (listing the
// policy's keys) or a bad value.
std::unique_ptr<Policy> make_policy(const std::string& spec, const PolicyInputs& inputs = {});
// Checks a spec without running it: builds it once (a policy that reads the recorded future gets
// an empty one), so a bad name, key or value fails as make_policy() says before a model loads.
void check_policy_spec(const std::string& spec);
// The entry of a spec's policy name; InvalidArgument for an unknown one.
const PolicyEntry& policy_entry(const std::string& spec);
// nullptr for an unknown name.
const PolicyEntry* find_policy(const std::string& name);
// Sorted; for --help.
std::vector<std::string> policy_names();
// A policy's name and keys for help texts, from its entry: "ondemand", "lru[:scope=global/layer]".
std::string policy_usage(const std::string& name);
// Those that do not need the model's routers: the ones a routing trace can drive (simulate, replay).
std::vector<std::string> trace_policy_names();
// `spec` with key=value added when its policy reads `key` and the spec does not set it, else `spec`
// as given: a flag that stands for a key (ferry moe bench --lru-scope, ferry moe simulate
// --window) is folded into each spec of a list, and a key the spec gives wins.
std::string with_policy_key(const std::string& spec, const std::string& key, const std::string& value);
// The name a report prints for a policy spec: the spec as given, or "prescope+llapor" for one whose
// only key is its predictor ("prescope:llapor:DIR"), so that two specs of one policy stay apart.
std::string policy_label(const std::string& spec);

}  // namespace ferry::moe
