#include "moe/store/link.h"

#include <map>
#include <mutex>

#include "core/error.h"
#include "core/units.h"

namespace ferry::moe {

std::unique_ptr<Link> make_emulated_link(const LinkSpec& spec, const LinkSource& source);
std::unique_ptr<Link> make_file_link(const LinkSpec& spec, const LinkSource& source);
#ifdef FERRY_MOE_CUDA_LINK
std::unique_ptr<Link> make_cuda_link(const LinkSpec& spec, const LinkSource& source);
#endif

namespace {

std::mutex& registry_mutex() {
  static std::mutex mu;
  return mu;
}
std::map<std::string, LinkFactory>& registry() {
  static std::map<std::string, LinkFactory> r;
  return r;
}

// "12GBps,10us" -> bandwidth and latency.
void parse_pair(const std::string& text, const std::string& body, LinkSpec& spec) {
  auto comma = body.find(',');
  if (comma == std::string::npos)
    FERRY_THROW(InvalidArgument, "invalid --link '", text, "': expected BANDWIDTH,LATENCY such as 12GBps,10us");
  spec.bandwidth_bytes_per_s = parse_bandwidth_bytes_per_s(body.substr(0, comma));
  spec.latency_s = parse_duration_s(body.substr(comma + 1));
}

}  // namespace

LinkSpec parse_link_spec(const std::string& text) {
  LinkSpec spec;
  spec.text = text;
  if (text == "pcie3") {  // PCIe 3.0 x16: 15.8 GB/s raw, about 12 GB/s achieved host->device
    spec.bandwidth_bytes_per_s = 12e9;
    spec.latency_s = 10e-6;
  } else if (text == "pcie4") {  // PCIe 4.0 x16: 31.5 GB/s raw, about 25 GB/s achieved
    spec.bandwidth_bytes_per_s = 25e9;
    spec.latency_s = 10e-6;
  } else if (text == "pcie5") {
    spec.bandwidth_bytes_per_s = 50e9;
    spec.latency_s = 10e-6;
  } else if (text == "none") {
    spec.kind = "none";
    spec.bandwidth_bytes_per_s = 0;
    spec.latency_s = 0;
  } else if (text == "file") {
    spec.kind = "file";
    spec.bandwidth_bytes_per_s = 0;
    spec.latency_s = 0;
  } else if (text.rfind("file:", 0) == 0) {
    spec.kind = "file";
    parse_pair(text, text.substr(5), spec);
  } else if (text == "cuda") {
    spec.kind = "cuda";
  } else if (text.rfind("emulated:", 0) == 0) {
    parse_pair(text, text.substr(9), spec);
  } else if (text == "mixtral-a100" || text.rfind("scaled:", 0) == 0) {
    spec.kind = "scaled";
  } else if (text.find(',') != std::string::npos) {
    parse_pair(text, text, spec);
  } else {
    FERRY_THROW(InvalidArgument, "invalid --link '", text,
                "': expected pcie3, pcie4, pcie5, BANDWIDTH,LATENCY (12GBps,10us), mixtral-a100, scaled:RATIO, "
                "file, none or cuda");
  }
  return spec;
}

LinkSpec resolve_scaled_link(const std::string& text, std::uint64_t expert_bytes, double device_expert_s) {
  LinkSpec spec = parse_link_spec(text);
  if (spec.kind != "scaled") return spec;
  double ratio = kMixtralA100TransferRatio;
  if (text.rfind("scaled:", 0) == 0) {
    try {
      ratio = std::stod(text.substr(7));
    } catch (const std::exception&) {
      FERRY_THROW(InvalidArgument, "invalid --link '", text, "': expected scaled:RATIO with a number");
    }
  }
  FERRY_REQUIRE(ratio > 0, "invalid --link '", text, "': ratio must be positive");
  FERRY_REQUIRE(device_expert_s > 0, "--link ", text,
                " needs a compute profile with a device expert time (--compute a100 or --device-expert-us)");
  spec.kind = "emulated";
  spec.latency_s = 10e-6;
  const double total = ratio * device_expert_s;
  FERRY_REQUIRE(total > spec.latency_s, "--link ", text, ": transfer time below the link latency");
  spec.bandwidth_bytes_per_s = static_cast<double>(expert_bytes) / (total - spec.latency_s);
  return spec;
}

void register_link(const std::string& kind, LinkFactory factory) {
  std::lock_guard lock(registry_mutex());
  registry()[kind] = std::move(factory);
}

void register_builtin_links() {
  register_link("emulated", make_emulated_link);
  register_link("none", make_emulated_link);
  register_link("file", make_file_link);
#ifdef FERRY_MOE_CUDA_LINK
  register_link("cuda", make_cuda_link);
#endif
}

std::unique_ptr<Link> make_link(const LinkSpec& spec, const LinkSource& source) {
  LinkFactory f;
  {
    std::lock_guard lock(registry_mutex());
    auto it = registry().find(spec.kind);
    if (it == registry().end()) {
      if (spec.kind == "cuda")
        FERRY_THROW(InvalidArgument, "--link cuda: this ferry was built without a CUDA libtorch");
      FERRY_THROW(InvalidArgument, "unknown link kind '", spec.kind, "'");
    }
    f = it->second;
  }
  return f(spec, source);
}

std::vector<std::string> link_kinds() {
  std::lock_guard lock(registry_mutex());
  std::vector<std::string> out;
  for (const auto& [k, v] : registry()) out.push_back(k);
  return out;
}

}  // namespace ferry::moe
