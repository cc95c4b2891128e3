#include "advise/queueing.h"

#include "core/error.h"

namespace ferry::advise {

double mva_cycle_s(int customers, const std::vector<double>& demands_s, double think_s) {
  FERRY_CHECK(customers >= 1 && think_s >= 0);
  std::vector<double> queue(demands_s.size(), 0.0), residence(demands_s.size(), 0.0);
  double throughput = 0;
  for (int m = 1; m <= customers; ++m) {
    double cycle = think_s;
    for (std::size_t k = 0; k < demands_s.size(); ++k) {
      FERRY_CHECK_GE(demands_s[k], 0);
      residence[k] = demands_s[k] * (1.0 + queue[k]);
      cycle += residence[k];
    }
    if (!(cycle > 0)) return 0;  // nothing takes time
    throughput = m / cycle;
    for (std::size_t k = 0; k < demands_s.size(); ++k) queue[k] = throughput * residence[k];
  }
  return customers / throughput;
}

}  // namespace ferry::advise
