// The emulated network: every rank has a NIC of `bandwidth` applied on egress and on ingress, and
// each message pays `latency` once in flight. --link chooses it in the links' grammar
// (core/link_spec.h) over a registry of kinds (link_options.cc): "1Gbps,50us", "emulated:1Gbps,50us",
// "emulated:bandwidth=1Gbps,latency=50us", "none".
#pragma once

#include <string>
#include <string_view>

namespace ferry::comm {

struct LinkOptions {
  double bandwidth_bytes_per_s = 0;  // per-NIC bandwidth, each direction; 0 = not emulated
  double latency_s = 0;              // one-way latency added to every message
  bool enabled() const { return bandwidth_bytes_per_s > 0; }
};

// Parses --link: a spec of the registry, BANDWIDTH[,LATENCY] alone (latency 0 when absent), or ""
// (none). Throws InvalidArgument naming the text on anything else.
LinkOptions parse_link_spec(std::string_view spec);
// --link's help: the grammar and every kind with its summary (core/link_spec.h).
std::string link_help();
// "1 Gbps, 50 us" or "none".
std::string describe(const LinkOptions& link);

}  // namespace ferry::comm
