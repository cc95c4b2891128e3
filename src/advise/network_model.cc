#include "advise/network_model.h"

#include <algorithm>
#include <cmath>

namespace ferry::advise {

double LinkModel::wire_s(double bytes) const {
  if (!(bandwidth_bytes_per_s > 0) || std::isinf(bandwidth_bytes_per_s)) return 0;
  return bytes / bandwidth_bytes_per_s;
}

double ring_allreduce_s(const LinkModel& l, int n, double bytes) {
  if (n <= 1 || bytes <= 0) return 0;
  return 2.0 * (n - 1) * (l.wire_s(bytes / n) + l.latency_s + l.message_s);
}

double ring_allgather_s(const LinkModel& l, int n, double bytes) {
  if (n <= 1) return 0;
  return (n - 1) * (l.wire_s(bytes) + l.latency_s + l.message_s);
}

double tree_allreduce_s(const LinkModel& l, int n, double bytes) {
  if (n <= 1 || bytes <= 0) return 0;
  const double depth = std::ceil(std::log2(static_cast<double>(n)));
  return 2.0 * depth * (l.wire_s(bytes) + l.latency_s + l.message_s);
}

double ps_push_s(const LinkModel& l, int workers, int servers, double bytes) {
  if (workers <= 0 || servers <= 0) return 0;
  return std::max(l.wire_s(bytes), workers * l.wire_s(bytes / servers)) + l.latency_s;
}

double ps_pull_s(const LinkModel& l, int workers, int servers, double bytes) { return ps_push_s(l, workers, servers, bytes); }

}  // namespace ferry::advise
