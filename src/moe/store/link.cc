#include "moe/store/link.h"

#include <cctype>

#include "core/error.h"
#include "core/registry.h"
#include "core/units.h"

namespace ferry::moe {

std::unique_ptr<Link> make_emulated_link(const LinkSpec& spec, const LinkSource& source);
std::unique_ptr<Link> make_file_link(const LinkSpec& spec, const LinkSource& source);
#ifdef FERRY_MOE_CUDA_LINK
std::unique_ptr<Link> make_cuda_link(const LinkSpec& spec, const LinkSource& source);
#endif

namespace {

Registry<LinkEntry>& registry() {
  static Registry<LinkEntry> r("link kind");
  return r;
}

// "12GBps,10us" -> bandwidth and latency, in the grammar training's --link shares.
void parse_rate(const std::string& text, const std::string& body, LinkSpec& spec) {
  const BandwidthLatency rate = parse_bandwidth_latency(body, text);
  spec.bandwidth_bytes_per_s = rate.bandwidth_bytes_per_s;
  spec.latency_s = rate.latency_s;
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
    parse_rate(text, text.substr(5), spec);
  } else if (text == "cuda") {
    spec.kind = "cuda";
  } else if (text.rfind("emulated:", 0) == 0) {
    parse_rate(text, text.substr(9), spec);
  } else if (text == "mixtral-a100") {
    spec.scaled_ratio = kMixtralA100TransferRatio;
  } else if (text.rfind("scaled:", 0) == 0) {
    std::size_t used = 0;
    try {
      spec.scaled_ratio = std::stod(text.substr(7), &used);
    } catch (const std::exception&) {
      used = 0;
    }
    FERRY_REQUIRE(used > 0 && used == text.size() - 7, "invalid --link '", text,
                  "': expected scaled:RATIO with a number");
    FERRY_REQUIRE(spec.scaled_ratio > 0, "invalid --link '", text, "': ratio must be positive");
  } else if (text.find(',') != std::string::npos || (!text.empty() && std::isdigit(static_cast<unsigned char>(text[0])))) {
    parse_rate(text, text, spec);
  } else {
    FERRY_THROW(InvalidArgument, "invalid --link '", text,
                "': expected pcie3, pcie4, pcie5, BANDWIDTH[,LATENCY] (12GBps,10us), mixtral-a100, scaled:RATIO, "
                "file, none or cuda");
  }
  return spec;
}

LinkSpec resolve_scaled_link(const std::string& text, std::uint64_t expert_bytes, double device_expert_s) {
  LinkSpec spec = parse_link_spec(text);
  if (spec.scaled_ratio <= 0) return spec;
  const double ratio = spec.scaled_ratio;
  FERRY_REQUIRE(device_expert_s > 0, "--link ", text,
                " needs a compute profile with a device expert time (--compute a100 or --device-expert-us)");
  spec.kind = "emulated";
  spec.latency_s = 10e-6;
  const double total = ratio * device_expert_s;
  FERRY_REQUIRE(total > spec.latency_s, "--link ", text, ": transfer time below the link latency");
  spec.bandwidth_bytes_per_s = static_cast<double>(expert_bytes) / (total - spec.latency_s);
  spec.scaled_ratio = 0;  // resolved: a plain emulated link from here on
  return spec;
}

void register_link(LinkEntry entry) { registry().add(std::move(entry)); }

void register_builtin_links() {
  auto& r = registry();
  r.add_if_absent({"emulated", "memcpy paced to a bandwidth and a per-transfer latency", "", make_emulated_link});
  r.add_if_absent({"none", "unpaced memcpy", "", [](const LinkSpec& spec, const LinkSource& source) {
                     LinkSpec unpaced = spec;
                     unpaced.bandwidth_bytes_per_s = 0;
                     return make_emulated_link(unpaced, source);
                   }});
  r.add_if_absent({"file", "O_DIRECT reads of the checkpoint, optionally paced", "", make_file_link});
#ifdef FERRY_MOE_CUDA_LINK
  r.add_if_absent({"cuda", "CUDA copy stream with pinned staging", "", make_cuda_link});
#else
  r.add_if_absent({"cuda", "CUDA copy stream with pinned staging", "this ferry was built without a CUDA libtorch"});
#endif
}

std::unique_ptr<Link> make_link(const LinkSpec& spec, const LinkSource& source) {
  FERRY_REQUIRE(spec.scaled_ratio <= 0, "--link ", spec.text, ": a scaled link needs resolve_scaled_link() first");
  const LinkEntry& entry = registry().at(spec.kind);
  FERRY_REQUIRE(entry.unavailable.empty(), "--link ", entry.name, ": ", entry.unavailable);
  return entry.make(spec, source);
}

const LinkEntry* find_link(const std::string& kind) { return registry().find(kind); }

std::vector<std::string> link_kinds() { return registry().names(); }

}  // namespace ferry::moe
