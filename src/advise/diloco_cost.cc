// Cost entries of DiLoCo and Streaming DiLoCo (train/diloco_strategy.h). Between synchronisations
// the workers compute side by side and send nothing; every H steps the outer gradient, a
// gradient-sized vector, is allreduced (compressed by the codec as S-SGD's gradient would be):
//   DiLoCo:     T = c st + E(S)/H,                                  bytes = B(S)/H
// with E and B S-SGD's allreduce exchange time and bytes. Streaming DiLoCo sends its P fragments,
// each once per H steps, fragment p holding the share s_p of the weights (train::fragment_cuts:
// whole tensors, so the shares are as even as the model's tensors allow), and the exchange of one
// overlaps the next τ inner steps:
//   Streaming:  T = c st + Σ_p max(0, s_p E(S) − τ c st) / H,       bytes = B(S)/H
// (the communication thread's copies are counted as waiting, not as a stretch of the compute).
#include <algorithm>
#include <string>
#include <vector>

#include "advise/cost_model.h"
#include "train/diloco_options.h"

namespace ferry::advise {
namespace {

IterationCost diloco_cost(const CostContext& x) {
  const std::string algo = x.sc().algo.empty() ? "diloco" : x.sc().algo;
  const train::DilocoOptions o = train::DilocoOptions::of_spec(algo);
  const double h = static_cast<double>(o.inner_steps);
  const double compute = x.compute1() * x.stretch(x.n());
  const double exchange = allreduce_exchange_s(x, x.sc().codec);
  const double hidden = static_cast<double>(o.overlap) * compute;
  std::vector<std::size_t> numels;
  for (const auto& t : x.sc().model->tensors) numels.push_back(t.numel);
  const std::vector<std::size_t> cuts = train::fragment_cuts(numels, o.fragments, algo);
  const double total = static_cast<double>(x.sc().model->parameters());
  double wait = 0;
  for (std::size_t p = 0; p + 1 < cuts.size(); ++p) {
    double share = 0;
    for (std::size_t t = cuts[p]; t < cuts[p + 1]; ++t) share += static_cast<double>(numels[t]) / total;
    wait += std::max(0.0, share * exchange - hidden);
  }
  return {compute + wait / h, compute, allreduce_bytes_sent(x, x.sc().codec) / h};
}

// The warm start's iterations are S-SGD's (warm_start_steps).
std::int64_t warm_start_steps(const Scenario& sc) {
  return train::DilocoOptions::of_spec(sc.algo.empty() ? "diloco" : sc.algo).warm_start_steps;
}

}  // namespace

void register_diloco_costs() {
  register_algorithm_cost({"diloco", "T = c st + E(S)/H", diloco_cost, warm_start_steps});
  register_algorithm_cost({"streaming-diloco", "T = c st + sum_p max(0, s_p E(S) - tau c st)/H", diloco_cost,
                           warm_start_steps});
}

}  // namespace ferry::advise
