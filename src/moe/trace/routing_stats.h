// Statistics of a routing trace: how evenly experts are loaded, and how predictable the next
// layer's experts are from the current layer's (what caching and prediction can exploit).
#pragma once

#include <string>
#include <vector>

#include "moe/trace/routing_trace.h"

namespace ferry::moe {

struct RoutingStats {
  double load_cv = 0;             // coefficient of variation of per-expert counts, mean over layers (0 = perfectly even)
  double max_load_ratio = 0;      // busiest expert's count / mean count, mean over layers
  double load_entropy = 0;        // normalised entropy of the expert distribution, mean over layers (1 = even)
  double next_layer_precision = 0;  // top-k precision of predicting layer l+1 from layer l's experts with a
                                    // co-occurrence table fitted on the first half of the tokens, tested on the second
  double previous_token_precision = 0;  // same layer, the previous token's experts as the prediction
  double random_precision = 0;          // top_k / num_experts
  int tokens = 0;
};

RoutingStats routing_stats(const RoutingTrace& trace);
// How often each expert is routed to over the whole trace, [layer * num_experts + e] (ids outside
// the shape ignored): the calibration counts of the static placements when a trace drives the
// routing (optimistic for them: they see the very tokens they are measured on).
std::vector<std::uint64_t> routing_counts(const RoutingTrace& trace, int num_layers, int num_experts);
std::string format_routing_stats(const RoutingStats& s);

}  // namespace ferry::moe
