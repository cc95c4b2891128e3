#include "moe/engine/engine_specs.h"

#include <charconv>
#include <cmath>

#include "core/error.h"
#include "core/hardware.h"
#include "core/units.h"

namespace ferry::moe {

std::string resolve_auto_compute(const std::string& text, const std::string& link_kind) {
  if (text != "auto") return text;
  return link_kind == "emulated" ? "a100" : "none";
}

ComputeProfile parse_compute_profile(const std::string& text) {
  ComputeProfile p;
  p.name = text;
  if (text == "none" || text.empty() || text == "auto") return p;
  if (text == "a100") {
    // 100 us: the emulated device's expert call, a scale (a tiny model's expert is not Mixtral's);
    // the host is as many times slower per token as on the A100 deployment (core/hardware.h).
    p.device_expert_s = 100e-6;
    p.host_token_s = p.device_expert_s * hardware::kA100HostRatio;
    return p;
  }
  auto comma = text.find(',');
  if (comma == std::string::npos)
    FERRY_THROW(InvalidArgument, "invalid --compute '", text, "': expected none, a100 or DEVICE,HOST_PER_TOKEN (100us,1ms)");
  p.device_expert_s = parse_duration_s(text.substr(0, comma));
  p.host_token_s = parse_duration_s(text.substr(comma + 1));
  return p;
}

std::uint64_t parse_device_mem(const std::string& text, std::uint64_t total_expert_bytes) {
  if (text.empty() || text.back() != '%') return parse_bytes(text);
  double pct = 0;
  const char* end = text.data() + text.size() - 1;
  const auto [stop, ec] = std::from_chars(text.data(), end, pct);
  FERRY_REQUIRE(ec == std::errc() && stop == end && pct > 0 && pct <= 100, "invalid --device-mem '", text,
                "': expected a percentage in (0, 100] such as 30%");
  return static_cast<std::uint64_t>(std::llround(pct / 100.0 * static_cast<double>(total_expert_bytes)));
}

}  // namespace ferry::moe
