#include "moe/engine/engine_specs.h"

#include <cctype>
#include <cmath>
#include <string_view>

#include "core/error.h"
#include "core/hardware.h"
#include "core/spec.h"
#include "core/units.h"

namespace ferry::moe {
namespace {

struct ComputeKind {
  std::string_view name;
  std::string_view summary;  // one line for --help
};
constexpr ComputeKind kComputeKinds[] = {
    {"none", "no padding: this CPU's real times"},
    {"a100", "the A100 deployment's: device expert 100us, host 1ms per token"},
    {"paced", "given times: paced:device_expert=100us,host_token=1ms or paced:100us,1ms"},
    {"auto", "a100 under an emulated link, else none"},
};

std::string compute_kind_names() {
  std::string names;
  for (const ComputeKind& k : kComputeKinds) names += std::string(names.empty() ? "" : ", ") + std::string(k.name);
  return names;
}

// DEVICE,HOST_PER_TOKEN alone ("100us,1ms") is paced's positional form.
bool is_bare_times(const std::string& text) {
  return text.find(':') == std::string::npos && text.find(',') != std::string::npos;
}

// paced's times: the positional DEVICE,HOST_PER_TOKEN or the keys device_expert and host_token.
void read_times(SpecReader& s, const std::string& text, ComputeProfile& p) {
  const std::string times = s.get_string("times", "");
  std::string device = s.get_string("device_expert", "");
  std::string host = s.get_string("host_token", "");
  FERRY_REQUIRE(times.empty() || (device.empty() && host.empty()), "invalid --compute '", text,
                "': give DEVICE,HOST_PER_TOKEN or device_expert= and host_token=, not both");
  if (!times.empty()) {
    const auto comma = times.find(',');
    FERRY_REQUIRE(comma != std::string::npos, "invalid --compute '", text,
                  "': expected DEVICE,HOST_PER_TOKEN such as 100us,1ms");
    device = times.substr(0, comma);
    host = times.substr(comma + 1);
  }
  FERRY_REQUIRE(!device.empty() && !host.empty(), "invalid --compute '", text,
                "': expected both times, e.g. paced:device_expert=100us,host_token=1ms");
  p.device_expert_s = parse_duration_s(device, "--compute device time");
  p.host_token_s = parse_duration_s(host, "--compute host time per token");
}

}  // namespace

std::string resolve_auto_compute(const std::string& text, const std::string& link_kind) {
  if (Spec::name_of(text) != "auto") return text;
  return link_kind == "emulated" ? "a100" : "none";
}

ComputeProfile parse_compute_profile(const std::string& text) {
  ComputeProfile p;
  p.name = text;
  if (text.empty()) return p;
  const bool bare = is_bare_times(text);
  const std::string name = bare ? "paced" : Spec::name_of(text);
  bool known = false;
  for (const ComputeKind& k : kComputeKinds) known |= k.name == name;
  FERRY_REQUIRE(known, "invalid --compute '", text, "': expected ", compute_kind_names(),
                " or DEVICE,HOST_PER_TOKEN (100us,1ms)");
  SpecReader s(Spec::parse(bare ? "paced:" + text : text, "--compute", name == "paced" ? "times" : ""), "--compute");
  if (name == "a100") {
    // 100 us: the emulated device's expert call, a scale (a tiny model's expert is not Mixtral's);
    // the host is as many times slower per token as on the A100 deployment (core/hardware.h).
    p.device_expert_s = 100e-6;
    p.host_token_s = p.device_expert_s * hardware::kA100HostRatio;
  } else if (name == "paced") {
    read_times(s, text, p);
  }
  s.finish();
  return p;
}

std::string compute_help() {
  std::string kinds;
  for (const ComputeKind& k : kComputeKinds)
    kinds += std::string(kinds.empty() ? "" : "; ") + std::string(k.name) + " (" + std::string(k.summary) + ")";
  return "compute profile, a spec KIND[:KEY=VALUE,...] or DEVICE,HOST_PER_TOKEN alone (= paced:100us,1ms); KIND: " + kinds;
}

std::uint64_t DeviceMem::budget_bytes(std::uint64_t total_expert_bytes) const {
  if (percent <= 0) return bytes;
  return static_cast<std::uint64_t>(std::llround(percent / 100.0 * static_cast<double>(total_expert_bytes)));
}

DeviceMem parse_device_mem(const std::string& text) {
  DeviceMem m;
  if (text == "auto") {
    m.automatic = true;
    return m;
  }
  FERRY_REQUIRE(!text.empty() && (std::isdigit(static_cast<unsigned char>(text[0])) || text[0] == '.'),
                "invalid --device-mem '", text, "': expected auto, a size such as 256MiB or a percentage of all "
                "experts such as 30%");
  if (text.back() == '%') {
    m.percent = parse_percent(text, "--device-mem");
    FERRY_REQUIRE(m.percent > 0 && m.percent <= 100, "invalid --device-mem '", text,
                  "': expected a percentage in (0, 100] such as 30%");
  } else {
    m.bytes = parse_bytes(text, "--device-mem");
  }
  return m;
}

}  // namespace ferry::moe
