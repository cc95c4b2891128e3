// The routing still to come, known in advance only where it was recorded (the simulator, the trace
// replay): what the oracle policy and the oracle predictor read. Positions count layers in
// execution order: position = step * num_layers + layer.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "moe/trace/expert_id.h"
#include "moe/trace/routing_trace.h"

namespace ferry::moe {

struct LayerRoute {
  std::vector<int> experts;  // distinct experts active, ascending
  std::vector<int> tokens;   // tokens routed to each of them
};

struct FutureRouting {
  int num_layers = 0;
  int num_experts = 0;
  std::vector<std::vector<LayerRoute>> steps;  // [step][layer]

  static constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();

  // Builds the per-expert position lists; call after filling steps.
  void index();
  std::int64_t positions() const { return static_cast<std::int64_t>(steps.size()) * num_layers; }
  const LayerRoute& at(std::int64_t position) const {
    return steps[position / num_layers][position % num_layers];
  }
  // First position after `after` at which `id` is active; kNever when none.
  std::int64_t next_use(ExpertId id, std::int64_t after) const;

 private:
  std::vector<std::vector<std::int64_t>> uses_;  // [layer * E + e] -> ascending positions
};

// Batch b of a trace with N decode tokens (in decode order, prompts concatenated): b concurrent
// sequences; sequence j starts at token floor(j N / b) and walks the stream cyclically, one token
// per step, for N steps. Every batch size thus sees every recorded token exactly b times, and
// step s of batch 1 is token s of the trace. A step's layer route is the union of its sequences'
// experts with the tokens routed to each.
FutureRouting form_batches(const RoutingTrace& trace, int batch, bool include_prefill = false);

// The routing the engine replays (EngineOptions::forced_routing) from reset() for a lock-step batch
// whose sequences each start with a prompt of `prompt_tokens` tokens, as form_batches() forms the
// batch: step 0 is the prompt (each expert's tokens over every sequence's prompt positions), step
// k >= 1 the k-th decode step (position P + k - 1); `steps` steps in all. What the oracle policies
// read when the engine runs on a trace's routing.
FutureRouting replay_future(const RoutingTrace& trace, int batch, int prompt_tokens, int steps);

}  // namespace ferry::moe
