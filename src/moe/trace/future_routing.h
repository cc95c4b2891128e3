// The routing still to come, known in advance only where it was recorded (the simulator, the trace
// replay): what the oracle policy and the oracle predictor read. Positions count layers in
// execution order: position = step * num_layers + layer.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "moe/trace/expert_id.h"

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
  // Tokens routed to `id` at `position` (0 when inactive or out of range).
  int tokens_at(std::int64_t position, int expert) const;

 private:
  std::vector<std::vector<std::int64_t>> uses_;  // [layer * E + e] -> ascending positions
};

}  // namespace ferry::moe
