// The offloading MoE engine: the Mixtral-family forward pass with non-expert weights resident,
// routed experts in an ExpertStore under a device budget, a Policy deciding placement, prefetch
// and eviction, and transfers on the AsyncIO thread. Compute waits only on the expert it needs
// now; that time is io_wait. Logits equal the reference forward's for every policy and budget.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "moe/model/language_model.h"
#include "moe/sched/policy.h"
#include "moe/trace/routing_trace.h"
#include "moe/store/expert_store.h"

namespace ferry::moe {

// How long compute takes on the emulated device and on the host. Compute runs on this CPU either
// way; a profile pads each expert call to at least the profiled time, so that placement decisions
// are judged as on the real machine.
struct ComputeProfile {
  std::string name = "none";   // "none": no padding (real CPU times)
  double device_expert_s = 0;  // device time of one expert call (memory-bound: flat in tokens for small batches)
  double host_token_s = 0;     // host time per token routed to one expert
};

// "none"; "a100": device expert 100 us, host 1 ms per token (10x: host memory bandwidth vs HBM, see
// docs/moe.md); or "DEVICE,HOST_PER_TOKEN" such as "100us,1ms". Throws InvalidArgument.
ComputeProfile parse_compute_profile(const std::string& text);

// "256MiB" (bytes) or "30%" (of all routed-expert bytes). Throws InvalidArgument naming the text.
std::uint64_t parse_device_mem(const std::string& text, std::uint64_t total_expert_bytes);

struct EngineOptions {
  std::string policy = "lru";      // a policy spec (make_policy(): "lru", "prescope:window=2", ...)
  PolicyOptions policy_options;    // passed to the policy factory
  std::string device_mem = "50%";  // device budget for routed experts (bytes or % of all experts)
  std::string link = "pcie4";      // see parse_link_spec(); "mixtral-a100" scales to the compute profile
  std::string compute = "none";    // see parse_compute_profile()
  std::uint64_t chunk_bytes = 1u << 20;  // transfer chunk (cancellation granularity)
  bool preload = false;            // fill the device budget before the first step (all-resident runs)
  // Routing replay (tests: the engine against the simulator): when set, each layer's top-k is the
  // trace's instead of the router's. Sequence j of a batch of B walks the trace's decode tokens from
  // token floor(j N / B), cyclically, one per position (as form_batches() forms batches), so decode
  // steps after reset() see exactly the routing the simulator sees for the same batch. Weights
  // come from the trace (1/top_k when it has none). The trace must match the model's layers,
  // experts and top_k; it outlives the engine.
  const RoutingTrace* forced_routing = nullptr;
};

struct EngineStats {
  std::uint64_t forwards = 0;         // forward() calls
  std::uint64_t tokens = 0;           // positions processed (batch x length)
  std::uint64_t expert_accesses = 0;  // (layer, expert) activations, once per forward and layer
  std::uint64_t hits = 0;             // device-placed experts already resident or on their way
  std::uint64_t host_execs = 0;       // experts executed on the host
  double forward_s = 0;               // wall time inside forward()
  double host_compute_s = 0;          // time in host expert calls (padded)
  double device_compute_s = 0;        // time in device expert calls (padded)
  double policy_s = 0;                // steady-clock time in the policy: its callbacks and victim choices
  double predictor_s = 0;             // ... of which in the predictor the policy was given (prescope)
  StoreStats store;                   // bytes moved, peak, io_wait ...
  std::uint64_t budget_bytes = 0;
  std::vector<std::uint64_t> expert_counts;  // routing counts [layer * E + e] (calibration for static policies)
  double hit_rate() const { return expert_accesses ? static_cast<double>(hits) / expert_accesses : 0.0; }
};

// Sees each layer's routing as it happens (the trace recorder): topk experts and weights per token
// [num_tokens x top_k] and the router input (normalised hidden state) [num_tokens x hidden_size].
using RouteObserver = std::function<void(int layer, int num_tokens, int top_k, const std::int64_t* experts,
                                         const float* weights, const float* hidden, int hidden_size)>;

class MoeEngine : public LanguageModel {
 public:
  // Opens the checkpoint in `model_dir` and builds store, link and policy. Throws InvalidArgument
  // for an impossible configuration (e.g. a budget below one layer's active experts).
  static std::unique_ptr<MoeEngine> open(const std::string& model_dir, const EngineOptions& options);
  ~MoeEngine() override;

  // Lock-step batches (LanguageModel): every row of `tokens` at the same position.
  std::vector<float> forward(const TokenBatch& tokens, bool all_positions = false) override;
  void reset() override;

  // Continuous batching (iteration-level scheduling, as Orca and vLLM do): sequences with their own
  // KV caches and positions share one forward. A step takes any number of tokens per sequence (a
  // prompt chunk or one decode token); their routed tokens meet in the same expert calls, so the
  // policy sees the mixed batch. Independent of forward()'s lock-step batch.
  struct SequenceInput {
    int sequence = 0;                     // from open_sequence()
    std::vector<std::int32_t> tokens;     // at least one; continue the sequence from its position
  };
  // A new, empty sequence; its id stays valid until close_sequence().
  int open_sequence();
  // Frees the sequence's KV cache. InvalidArgument for an unknown id.
  void close_sequence(int sequence);
  // One forward over every input; returns the logits of each input's last position, [inputs x V].
  // InvalidArgument for an unknown or repeated sequence, an empty input, a token outside the
  // vocabulary or a sequence past max_position_embeddings (nothing is changed then).
  std::vector<float> step(const std::vector<SequenceInput>& inputs);
  // The position (tokens so far) of an open sequence.
  std::int64_t sequence_position(int sequence) const;
  const MoeConfig& config() const override;

  EngineStats stats() const;
  void reset_stats();
  void set_route_observer(RouteObserver observer);
  // Budget, link, compute profile and transfer/compute ratio, one line.
  std::string describe() const;
  std::uint64_t expert_bytes() const;
  std::uint64_t total_expert_bytes() const;
  // Positions the KV cache holds now, summed over layers (a windowed layer keeps at most W - 1 + T).
  std::int64_t kv_cached_positions() const;
  const CostModel& cost_model() const;

 private:
  MoeEngine();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ferry::moe
