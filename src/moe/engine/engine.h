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

#include "moe/engine/engine_specs.h"
#include "moe/engine/memory_plan.h"
#include "moe/model/language_model.h"
#include "moe/sched/policy.h"
#include "moe/trace/routing_trace.h"
#include "moe/store/expert_store.h"

namespace ferry::moe {

struct EngineOptions {
  // A policy spec (make_policy(): "lru", "prescope:window=2", ...), or "auto": lru with every
  // expert loaded at start when the budget holds them all (nothing to prefetch), else prescope.
  std::string policy = "lru";
  PolicyInputs policy_inputs;      // what the policy is built from besides its spec (make_policy())
  // Device budget for routed experts: bytes, % of all experts, or "auto" (memory_plan.h: every
  // expert resident when the model fits in what this process may use, else what fits). Every
  // budget is checked against that memory before the experts load (InvalidArgument when it cannot fit).
  std::string device_mem = "50%";
  // KV cache memory the caller's sequences may hold together, which the budget leaves room for:
  // bytes, or "auto": max_sequences full contexts, at most 1/8 of the memory this process may use.
  std::string kv_mem = "auto";
  int max_sequences = 1;           // sequences open at once (the server's --max-batch)
  std::int64_t max_step_tokens = 256;  // tokens of the largest step (sizes the workspace reserve)
  std::string link = "pcie4";      // see parse_link_spec(); "mixtral-a100" scales to the compute profile
  std::string compute = "none";    // see parse_compute_profile()
  // The routed experts' weight format in the host pool, on the link and in the device budget:
  // F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K or MXFP4 (moe/quant; quantized at load from the checkpoint), or
  // "" for as the model stores them (float32 for a safetensors checkpoint; a GGUF file's types).
  std::string weights = "";
  // The dense projections (attention, shared experts, dense MLPs, head) of a GGUF file: computed
  // on their blocks as stored (true, as llama.cpp does), or dequantized to float32 at load (false:
  // only the experts' format then differs from the float model).
  bool dense_as_stored = true;
  std::uint64_t chunk_bytes = 1u << 20;  // transfer chunk (cancellation granularity)
  bool preload = false;            // fill the device budget before the first step (all-resident runs)
  // A layer's device experts whose bytes are in place computed together (expert_group.h: one
  // parallel region for gate and up of all, one for down), or false: one call per expert. The
  // logits are the same bit for bit either way.
  bool group_experts = true;
  // Routing replay (tests: the engine against the simulator): when set, each layer's top-k is the
  // trace's instead of the router's. A sequence walks the trace's N decode tokens cyclically, one per
  // position, from its routing_offset (SequenceOptions); sequence j of a lock-step batch of B starts
  // at token floor(j N / B) (as form_batches() forms batches), so decode steps after reset() see
  // exactly the routing the simulator sees for the same batch. Weights come from the trace (1/top_k
  // when it has none). The trace must match the model's layers, experts and top_k; it outlives the
  // engine.
  const RoutingTrace* forced_routing = nullptr;
};

struct EngineStats {
  std::uint64_t forwards = 0;         // forward() and step() calls
  std::uint64_t tokens = 0;           // positions processed (batch x length)
  std::uint64_t expert_accesses = 0;  // (layer, expert) activations, once per forward and layer
  std::uint64_t hits = 0;             // device-placed experts already resident or on their way
  std::uint64_t host_execs = 0;       // experts executed on the host
  std::uint64_t grouped_calls = 0;    // device expert calls made in groups (EngineOptions::group_experts)
  double forward_s = 0;               // wall time inside forward() and step()
  // ... of which (wall time, every layer): attention (its norm, projections, RoPE, cache, scores);
  // the MoE blocks (their norm, the router, dispatch, waits for loads, the expert calls counted
  // below, shared experts); the final norm and the output projection. The rest of forward_s is
  // the embedding and the joins between them.
  double attention_s = 0;
  double moe_s = 0;
  double head_s = 0;
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

// How a sequence of MoeEngine::step() is opened.
struct SequenceOptions {
  // > 0: the sequence is refused beyond this many positions, and its KV cache never holds more
  // than kv_cache_bytes() of them; 0: max_position_embeddings.
  std::int64_t max_positions = 0;
  // Routing replay (EngineOptions::forced_routing): the first of the trace's decode tokens this
  // sequence takes (modulo their number).
  std::size_t routing_offset = 0;
};

// The link `options.link` names for the model at `model_dir`: `auto` resolved (resolve_auto_link:
// a GGUF file, the model a file path opens, computed as stored streams from it), else as given.
std::string resolved_link(const std::string& model_dir, const EngineOptions& options);
// True when the engine `options` open for `model_dir` reads its experts from the model's file on
// every miss (a link that keeps no host copy: `file`, or `auto` on a GGUF file computed as stored)
// and, under --device-mem auto, the experts are not all expected to be resident.
bool streams_from_disk(const std::string& model_dir, const EngineOptions& options);

class MoeEngine : public LanguageModel {
 public:
  // Opens the checkpoint in `model_dir` and builds store, link and policy. Throws InvalidArgument
  // for an impossible configuration (e.g. a budget below one layer's active experts).
  static std::unique_ptr<MoeEngine> open(const std::string& model_dir, const EngineOptions& options);
  ~MoeEngine() override;

  // Sequences with their own KV caches and positions share each forward (iteration-level
  // scheduling, as Orca and vLLM do): a step takes any number of tokens per sequence (a prompt chunk
  // or one decode token); their routed tokens meet in the same expert calls, so the policy sees the
  // mixed batch. forward() is the same path: its B rows are B sequences that joined together and
  // advance in lock step until reset().
  struct SequenceInput {
    int sequence = 0;                     // from open_sequence()
    std::vector<std::int32_t> tokens;     // at least one; continue the sequence from its position
  };
  // A new, empty sequence; its id stays valid until close_sequence(). InvalidArgument for a limit
  // outside 0 .. max_position_embeddings.
  int open_sequence(const SequenceOptions& options = {});
  // Frees the sequence's KV cache. InvalidArgument for an unknown id.
  void close_sequence(int sequence);
  // Keeps the first `positions` positions of an open sequence and gives it a new limit (0:
  // max_position_embeddings), so that a new prompt that shares them continues from there (prefix
  // caching; KvCache::rewind). False, with nothing changed, when its cache cannot (a sliding
  // window dropped what the next position needs). InvalidArgument for an unknown id.
  bool rewind_sequence(int sequence, std::int64_t positions, std::int64_t max_positions);
  // One forward over every input; returns the logits of each input's last position, [inputs x V].
  // InvalidArgument for an unknown or repeated sequence, an empty input, a token outside the
  // vocabulary or a sequence past its limit or max_position_embeddings (nothing is changed then).
  std::vector<float> step(const std::vector<SequenceInput>& inputs);
  // The position (tokens so far) of an open sequence.
  std::int64_t sequence_position(int sequence) const;

  // Lock-step batches (LanguageModel): row b of `tokens` continues sequence b of the batch that
  // the first forward() after reset() opened; every row has the same length.
  std::vector<float> forward(const TokenBatch& tokens, bool all_positions = false) override;
  // Closes forward()'s sequences (step()'s stay open).
  void reset() override;
  const MoeConfig& config() const override;

  EngineStats stats() const;
  void reset_stats();
  void set_route_observer(RouteObserver observer);
  // Budget, link, compute profile and transfer/compute ratio, one line.
  std::string describe() const;
  std::uint64_t expert_bytes() const;
  std::uint64_t total_expert_bytes() const;
  // The budget's plan: its bytes, whether every expert is resident, and why (memory_plan.h).
  const MemoryPlan& memory_plan() const;
  // The KV cache memory the budget left room for (EngineOptions::kv_mem resolved).
  std::uint64_t kv_reserve_bytes() const;
  // Positions the KV caches of every open sequence hold now, summed over layers (a windowed layer
  // keeps at most W - 1 + T).
  std::int64_t kv_cached_positions() const;
  // Bytes the KV caches of every open sequence have allocated now.
  std::uint64_t kv_bytes() const;
  const CostModel& cost_model() const;

 private:
  MoeEngine();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ferry::moe
