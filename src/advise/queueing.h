// Mean-value analysis of a closed queueing network (Reiser & Lavenberg, "Mean-value analysis of
// closed multichain queuing networks", J. ACM 27(2), 1980): `customers` jobs cycle through
// queueing stations, each visit to station k taking d_k seconds of its service, and one delay
// station (no queue) of `think` seconds. Exact for product-form networks; the recursion over
// the population m = 1..customers:
//
//   R_k(m) = d_k (1 + Q_k(m - 1)),   X(m) = m / (think + sum_k R_k(m)),   Q_k(m) = X(m) R_k(m)
//
// ferry advise uses it for asynchronous SGD, whose workers queue at the servers' NICs and loop.
#pragma once

#include <vector>

namespace ferry::advise {

// Seconds one job takes per cycle with `customers` jobs in the network (customers / X).
double mva_cycle_s(int customers, const std::vector<double>& demands_s, double think_s);

}  // namespace ferry::advise
