// The times a policy weighs when it decides where an expert runs and what to move.
#pragma once

namespace ferry::moe {

struct CostModel {
  static constexpr double kNever = 1e30;  // the host cost where there is no host copy: no plan picks it

  double transfer_s = 0;       // one expert host -> device over the link, latency included
  double device_expert_s = 0;  // device compute of one expert at batch 1 (about flat for small batches)
  double host_token_s = 0;     // host compute per token routed to one expert (host cost is linear in tokens)
  double device_layer_s = 0;   // device compute of one layer without its experts (attention, router); 0 = unknown
  bool host_available = true;  // false: the experts have no host copy (they stream from disk), none runs there

  double host_expert_s(int tokens) const { return host_available ? host_token_s * tokens : kNever; }
};

}  // namespace ferry::moe
