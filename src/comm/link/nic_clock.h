// The pacing arithmetic of one emulated NIC, apart from threads and sleeping, so that it can be
// checked exactly. Every rank has one; times are seconds on one monotonic clock.
//
//   egress:  start = max(now, egress_free); egress_end = start + bytes/B; egress_free = egress_end
//   ingress: delivered = max(egress_end + latency, ingress_free + bytes/B); ingress_free = delivered
//
// N senders pushing M bytes each to one receiver at once therefore see their messages delivered
// at latency + M/B, latency + 2·M/B, ..., latency + N·M/B: they share the receiver's ingress
// (incast), as behind a real switch.
#pragma once

#include <algorithm>
#include <cstddef>

#include "comm/link/link_options.h"

namespace ferry::comm {

class NicClock {
 public:
  explicit NicClock(LinkOptions link) : link_(link) {}

  // A message of `bytes` handed to the NIC at `now_s` leaves it (its last byte is on the wire)
  // at the returned time.
  double depart(double now_s, std::size_t bytes) {
    const double start = std::max(now_s, egress_free_s_);
    egress_free_s_ = start + bytes / link_.bandwidth_bytes_per_s;
    return egress_free_s_;
  }
  // A message that left its sender at `egress_end_s` is delivered here at the returned time.
  double arrive(double egress_end_s, std::size_t bytes) {
    ingress_free_s_ = std::max(egress_end_s + link_.latency_s, ingress_free_s_ + bytes / link_.bandwidth_bytes_per_s);
    return ingress_free_s_;
  }

 private:
  LinkOptions link_;
  double egress_free_s_ = 0;
  double ingress_free_s_ = 0;
};

}  // namespace ferry::comm
