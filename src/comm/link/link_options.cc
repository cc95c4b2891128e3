#include "comm/link/link_options.h"

#include <functional>

#include "core/error.h"
#include "core/link_spec.h"
#include "core/registry.h"
#include "core/units.h"

namespace ferry::comm {
namespace {

// A kind of training link: its registry entry (core/registry.h).
struct NicLinkEntry {
  std::string name;                 // its spec name
  std::string summary;              // one line for help texts
  // Reads the entry's options; `text` is the flag's value, for errors. Null: no options, no link.
  std::function<LinkOptions(SpecReader&, std::string_view text)> read = {};
  std::string positional_key = {};  // "emulated:1Gbps,50us" = "emulated:rate=1Gbps,50us"
  bool bare_rate = false;           // BANDWIDTH[,LATENCY] alone reads as this kind
};

Registry<NicLinkEntry>& registry() {
  static Registry<NicLinkEntry> r("--link");
  return r;
}

// emulated and none. Idempotent.
void register_builtin_nic_links() {
  auto& r = registry();
  r.add_if_absent({.name = "emulated",
                   .summary = "a NIC per rank of BANDWIDTH each way, LATENCY per message: emulated:1Gbps,50us or "
                              "emulated:bandwidth=1Gbps,latency=50us",
                   .read =
                       [](SpecReader& s, std::string_view text) {
                         const auto rate = read_link_rate(s, text);
                         FERRY_REQUIRE(rate.has_value(), "invalid --link '", text,
                                       "': expected a bandwidth, e.g. emulated:1Gbps,50us");
                         return LinkOptions{rate->bandwidth_bytes_per_s, rate->latency_s};
                       },
                   .positional_key = "rate",
                   .bare_rate = true});
  r.add_if_absent({.name = "none", .summary = "no emulation: the transport's own speed"});
}

}  // namespace

LinkOptions parse_link_spec(std::string_view spec) {
  if (spec.empty()) return {};
  register_builtin_nic_links();
  auto [entry, options] = parse_link(registry(), spec);
  const LinkOptions link = entry->read ? entry->read(options, spec) : LinkOptions{};
  options.finish();
  return link;
}

std::string link_help() {
  register_builtin_nic_links();
  return ferry::link_help(registry());
}

std::string describe(const LinkOptions& link) {
  if (!link.enabled()) return "none";
  return format_bandwidth(link.bandwidth_bytes_per_s) + ", " + format_duration(link.latency_s);
}

}  // namespace ferry::comm
