// Cost entry of local SGD / post-local SGD (Stich 2019; Lin et al. 2020): every worker steps on
// its own gradient and the models are averaged by one allreduce of the weights every H steps;
// the first K steps (post_local) are S-SGD on the allreduce. The workers meet at every
// averaging, so between them they compute side by side (all n on the shared cores):
//   T = c st + (AR(S) + kappa 4(n-1)/n S st) / H,   bytes = 2(n-1)/n S / H
#include "advise/cost_model.h"
#include "train/local_sgd_options.h"

namespace ferry::advise {
namespace {

train::LocalSgdOptions options_of(const Scenario& sc) {
  return train::LocalSgdOptions::of_spec(sc.algo.empty() ? "localsgd" : sc.algo);
}

IterationCost local_sgd_cost(const CostContext& x) {
  const int n = x.n();
  const double st = x.stretch(n);
  const double S = x.fp32_bytes();
  const double h = static_cast<double>(options_of(x.sc()).sync_every);
  const double compute = x.compute1() * st;
  const double average = ring_allreduce_s(x.link(), n, S) + x.copy_s(4.0 * (n - 1) / n * S) * st + x.staging_s(2 * S);
  return {compute + average / h, compute, 2.0 * (n - 1) / n * S / h};
}

}  // namespace

void register_local_sgd_cost() {
  register_algorithm_cost({"localsgd", "T = c st + AR(S)/H", local_sgd_cost,
                           [](const Scenario& sc) { return options_of(sc).post_local; }});
}

}  // namespace ferry::advise
