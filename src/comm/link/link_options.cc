#include "comm/link/link_options.h"

#include "core/error.h"
#include "core/units.h"

namespace ferry::comm {

LinkOptions parse_link_spec(std::string_view spec) {
  LinkOptions link;
  if (spec.empty() || spec == "none") return link;
  const BandwidthLatency rate = parse_bandwidth_latency(spec);
  link.bandwidth_bytes_per_s = rate.bandwidth_bytes_per_s;
  link.latency_s = rate.latency_s;
  return link;
}

std::string describe(const LinkOptions& link) {
  if (!link.enabled()) return "none";
  return format_bandwidth(link.bandwidth_bytes_per_s) + ", " + format_duration(link.latency_s);
}

}  // namespace ferry::comm
