// The emulated network: every rank has a NIC of `bandwidth` applied on egress and on ingress, and
// each message pays `latency` once in flight. "1Gbps,50us" style specs.
#pragma once

#include <string>
#include <string_view>

namespace ferry::comm {

struct LinkOptions {
  double bandwidth_bytes_per_s = 0;  // per-NIC bandwidth, each direction; 0 = not emulated
  double latency_s = 0;              // one-way latency added to every message
  bool enabled() const { return bandwidth_bytes_per_s > 0; }
};

// Parses "1Gbps,50us", "10Gbps" (latency 0) or "none"/"" (no emulation). Throws InvalidArgument
// naming the spec on anything else.
LinkOptions parse_link_spec(std::string_view spec);
// "1 Gbps, 50 us" or "none".
std::string describe(const LinkOptions& link);

}  // namespace ferry::comm
