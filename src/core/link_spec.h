// --link, the one grammar of both engines' links: training's emulated NICs (comm/link/link_options.h)
// and MoE's host-to-device links (moe/store/link.h). A link is a spec (core/spec.h) of its engine's
// link registry (core/registry.h), which says which kinds there are:
//   KIND                      none, emulated, file, pcie4, ...
//   KIND:key=value,...        emulated:bandwidth=1Gbps,latency=50us
//   KIND:BANDWIDTH[,LATENCY]  emulated:1Gbps,50us (a kind whose positional key is "rate")
//   BANDWIDTH[,LATENCY]       alone: the kind whose entry reads a bare rate (bare_rate), emulated
// A paced kind reads its rate with read_link_rate(), so that every kind spells it the same way.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "core/registry.h"
#include "core/spec.h"
#include "core/units.h"

namespace ferry {

// Whether `text` is BANDWIDTH[,LATENCY] alone ("1Gbps,50us", "10Gbps", "-1Gbps", ",50us"): no ':',
// and a ',' or a first character that no kind's name starts with (a letter).
bool is_bare_link_rate(std::string_view text);

// A link's rate from its spec: the positional "rate" (BANDWIDTH[,LATENCY]) or the keys bandwidth
// and latency; nullopt when none of them is given. InvalidArgument naming `text` (the flag's value)
// for a bad rate, both forms at once, or a latency without a bandwidth.
std::optional<BandwidthLatency> read_link_rate(SpecReader& s, std::string_view text);

// Parses `text` as a link spec of `links`: its entry (an unknown kind is an InvalidArgument listing
// the known ones) and a reader over its options, which the caller hands to the entry and then
// finish()es. A bare rate reads as the kind whose entry has `bare_rate` set.
template <class Entry>
std::pair<const Entry*, SpecReader> parse_link(const Registry<Entry>& links, std::string_view text) {
  if (is_bare_link_rate(text) && !links.contains(Spec::name_of(text)))
    for (const Entry& e : links.entries())
      if (e.bare_rate) return links.parse(e.name + ":" + std::string(text));
  return links.parse(text);
}

// --link's help: the grammar and every kind of `links` with its one-line summary, in registration
// order. Call once registration is over (Registry::entries()).
template <class Entry>
std::string link_help(const Registry<Entry>& links) {
  std::string bare, kinds;
  for (const Entry& e : links.entries()) {
    if (e.bare_rate) bare = e.name;
    kinds += (kinds.empty() ? "" : "; ") + e.name + " (" + e.summary + ")";
  }
  std::string help = "a spec KIND[:KEY=VALUE,...]";
  if (!bare.empty()) help += " or BANDWIDTH[,LATENCY] alone (= " + bare + ":BANDWIDTH[,LATENCY], e.g. 1Gbps,50us)";
  return help + "; KIND: " + kinds;
}

}  // namespace ferry
