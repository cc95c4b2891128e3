// Cost entries of DiLoCo and Streaming DiLoCo (train/diloco_strategy.h). Between synchronisations
// the workers compute side by side and send nothing; every H steps the outer gradient, a
// gradient-sized vector, is allreduced (compressed by the codec as S-SGD's gradient would be):
//   DiLoCo:     T = c st + E(S)/H,                                  bytes = B(S)/H
// with E and B S-SGD's allreduce exchange time and bytes. Streaming DiLoCo sends P fragments of
// S/P each, once per H steps each, and the exchange of one overlaps the next τ inner steps:
//   Streaming:  T = c st + P · max(0, E(S)/P − τ c st) / H,         bytes = B(S)/H
// (the communication thread's copies are counted as waiting, not as a stretch of the compute).
#include <algorithm>

#include "advise/cost_model.h"
#include "train/diloco_options.h"

namespace ferry::advise {
namespace {

IterationCost diloco_cost(const CostContext& x) {
  const train::DilocoOptions o = train::DilocoOptions::of_spec(x.sc().algo.empty() ? "diloco" : x.sc().algo);
  const double h = static_cast<double>(o.inner_steps), p = static_cast<double>(o.fragments);
  const double compute = x.compute1() * x.stretch(x.n());
  const double exchange = allreduce_exchange_s(x, x.sc().codec);
  const double hidden = static_cast<double>(o.overlap) * compute;
  const double wait = p * std::max(0.0, exchange / p - hidden);
  return {compute + wait / h, compute, allreduce_bytes_sent(x, x.sc().codec) / h};
}

}  // namespace

void register_diloco_costs() {
  register_algorithm_cost({"diloco", "T = c st + E(S)/H", diloco_cost, {}});
  register_algorithm_cost({"streaming-diloco", "T = c st + P max(0, E(S)/P - tau c st)/H", diloco_cost, {}});
}

}  // namespace ferry::advise
