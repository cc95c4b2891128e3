// The emulated network: every rank has a NIC of `bandwidth` applied on egress and on ingress, and
// each message pays `latency` once in flight. --link chooses it in the links' grammar
// (core/link_spec.h) over the kinds of this file's registry: "1Gbps,50us", "emulated:1Gbps,50us",
// "emulated:bandwidth=1Gbps,latency=50us", "none".
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/spec.h"

namespace ferry::comm {

struct LinkOptions {
  double bandwidth_bytes_per_s = 0;  // per-NIC bandwidth, each direction; 0 = not emulated
  double latency_s = 0;              // one-way latency added to every message
  bool enabled() const { return bandwidth_bytes_per_s > 0; }
};

// A kind of training link: its registry entry (core/registry.h).
struct NicLinkEntry {
  std::string name;                 // its spec name
  std::string summary;              // one line for help texts
  // Reads the entry's options; `text` is the flag's value, for errors. Null: no options, no link.
  std::function<LinkOptions(SpecReader&, std::string_view text)> read = {};
  std::string positional_key = {};  // "emulated:1Gbps,50us" = "emulated:rate=1Gbps,50us"
  bool bare_rate = false;           // BANDWIDTH[,LATENCY] alone reads as this kind
};

// emulated and none. Idempotent.
void register_builtin_nic_links();
// Parses --link: a spec of the registry, BANDWIDTH[,LATENCY] alone (latency 0 when absent), or ""
// (none). Throws InvalidArgument naming the text on anything else.
LinkOptions parse_link_spec(std::string_view spec);
// --link's help: the grammar and every kind with its summary (core/link_spec.h).
std::string link_help();
// "1 Gbps, 50 us" or "none".
std::string describe(const LinkOptions& link);

}  // namespace ferry::comm
