#include "core/link_spec.h"

#include <cctype>

#include "core/error.h"

namespace ferry {

bool is_bare_link_rate(std::string_view text) {
  if (text.find(':') != std::string_view::npos) return false;
  if (text.find(',') != std::string_view::npos) return true;
  const auto first = text.find_first_not_of(" \t");
  return first != std::string_view::npos && !std::isalpha(static_cast<unsigned char>(text[first]));
}

std::optional<BandwidthLatency> read_link_rate(SpecReader& s, std::string_view text) {
  const std::string rate = s.get_string("rate", "");
  const std::string bandwidth = s.get_string("bandwidth", "");
  const std::string latency = s.get_string("latency", "");
  FERRY_REQUIRE(rate.empty() || (bandwidth.empty() && latency.empty()), "invalid --link '", text,
                "': give BANDWIDTH[,LATENCY] or bandwidth= and latency=, not both");
  FERRY_REQUIRE(latency.empty() || !bandwidth.empty(), "invalid --link '", text, "': latency= needs bandwidth=");
  if (rate.empty() && bandwidth.empty()) return std::nullopt;
  return parse_bandwidth_latency(!rate.empty() ? rate : latency.empty() ? bandwidth : bandwidth + "," + latency, text);
}

}  // namespace ferry
