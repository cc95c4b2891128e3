#include "comm/link/link_options.h"

#include "core/error.h"
#include "core/units.h"

namespace ferry::comm {

LinkOptions parse_link_spec(std::string_view spec) {
  LinkOptions link;
  if (spec.empty() || spec == "none") return link;
  auto comma = spec.find(',');
  std::string_view bw = spec.substr(0, comma);
  try {
    link.bandwidth_bytes_per_s = parse_bandwidth_bytes_per_s(bw);
    if (comma != std::string_view::npos) {
      std::string_view lat = spec.substr(comma + 1);
      if (lat.find(',') != std::string_view::npos)
        FERRY_THROW(InvalidArgument, "more than two fields");
      link.latency_s = parse_duration_s(lat);
    }
  } catch (const InvalidArgument& e) {
    FERRY_THROW(InvalidArgument, "invalid --link '", spec, "' (expected BANDWIDTH[,LATENCY] such as 1Gbps,50us, or none): ",
                e.what());
  }
  return link;
}

std::string describe(const LinkOptions& link) {
  if (!link.enabled()) return "none";
  return format_bandwidth(link.bandwidth_bytes_per_s) + ", " + format_duration(link.latency_s);
}

}  // namespace ferry::comm
