#include "moe/store/link.h"

#include "core/error.h"
#include "core/hardware.h"
#include "core/link_spec.h"
#include "core/registry.h"
#include "core/spec.h"

namespace ferry::moe {

std::unique_ptr<Link> make_emulated_link(const LinkSpec& spec, const LinkSource& source);
std::unique_ptr<Link> make_file_link(const LinkSpec& spec, const LinkSource& source);
#ifdef FERRY_MOE_CUDA_LINK
std::unique_ptr<Link> make_cuda_link(const LinkSpec& spec, const LinkSource& source);
#endif

namespace {

Registry<LinkEntry>& registry() {
  static Registry<LinkEntry> r("--link");
  return r;
}

// A link's rate (core/link_spec.h); absent, `spec` keeps what it had.
void read_rate(SpecReader& s, LinkSpec& spec) {
  if (const auto rate = read_link_rate(s, spec.text)) {
    spec.bandwidth_bytes_per_s = rate->bandwidth_bytes_per_s;
    spec.latency_s = rate->latency_s;
  }
}

// An unpaced link: no bandwidth limit, no latency.
void unpaced(LinkSpec& spec) {
  spec.bandwidth_bytes_per_s = 0;
  spec.latency_s = 0;
}

}  // namespace

LinkSpec parse_link_spec(const std::string& text) {
  register_builtin_links();
  LinkSpec spec;
  spec.text = text;
  auto [entry, options] = parse_link(registry(), text);
  spec.kind = entry->name;
  if (entry->read) entry->read(options, spec);
  options.finish();
  return spec;
}

std::string resolve_auto_link(const std::string& text, bool gguf_as_stored) {
  if (parse_link_spec(text).kind != "auto") return text;
  return gguf_as_stored ? "file" : "mixtral-a100";
}

LinkSpec resolve_scaled_link(const std::string& text, std::uint64_t expert_bytes, double device_expert_s) {
  LinkSpec spec = parse_link_spec(text);
  if (spec.scaled_ratio <= 0) return spec;
  const double ratio = spec.scaled_ratio;
  FERRY_REQUIRE(device_expert_s > 0, "--link ", text,
                " needs a compute profile with a device expert time (--compute a100 or --device-expert-us)");
  spec.kind = "emulated";
  spec.latency_s = LinkSpec{}.latency_s;
  const double total = ratio * device_expert_s;
  FERRY_REQUIRE(total > spec.latency_s, "--link ", text, ": transfer time below the link latency");
  spec.bandwidth_bytes_per_s = static_cast<double>(expert_bytes) / (total - spec.latency_s);
  spec.scaled_ratio = 0;  // resolved: a plain emulated link from here on
  return spec;
}

void register_link(LinkEntry entry) { registry().add(std::move(entry)); }

void register_builtin_links() {
  auto& r = registry();
  r.add_if_absent({.name = "emulated",
                   .summary = "memcpy paced to a bandwidth and a per-transfer latency (default: PCIe 4.0's)",
                   .make = make_emulated_link,
                   .read = read_rate,
                   .positional_key = "rate",
                   .bare_rate = true});
  r.add_if_absent({.name = "none",
                   .summary = "unpaced memcpy",
                   .make = [](const LinkSpec& spec, const LinkSource& source) {
                     LinkSpec unpaced = spec;
                     unpaced.bandwidth_bytes_per_s = 0;
                     return make_emulated_link(unpaced, source);
                   },
                   .read = [](SpecReader&, LinkSpec& spec) { unpaced(spec); }});
  r.add_if_absent({.name = "file",
                   .summary = "O_DIRECT reads of the checkpoint, reads=N chunks at once (default 4), optionally paced",
                   .make = make_file_link,
                   .read =
                       [](SpecReader& s, LinkSpec& spec) {
                         unpaced(spec);
                         read_rate(s, spec);
                         const std::int64_t reads = s.get_int("reads", spec.reads_in_flight);
                         FERRY_REQUIRE_IN(reads, 1, 64, "[]", "--link '", spec.text, "': reads");
                         spec.reads_in_flight = static_cast<int>(reads);
                       },
                   .positional_key = "rate",
                   .keeps_host_copy = false});
#ifdef FERRY_MOE_CUDA_LINK
  r.add_if_absent({.name = "cuda", .summary = "CUDA copy stream with pinned staging", .make = make_cuda_link});
#else
  r.add_if_absent({.name = "cuda",
                   .summary = "CUDA copy stream with pinned staging",
                   .unavailable = "this ferry was built without a CUDA libtorch"});
#endif
  // Shorthands: entries that read as an emulated link.
  for (const hardware::HostLink& link : hardware::kHostLinks)
    r.add_if_absent({.name = std::string(link.name),
                     .summary = std::string(link.summary) + ", emulated (core/hardware.h)",
                     .read = [&link](SpecReader&, LinkSpec& spec) {
                       spec.kind = "emulated";
                       spec.bandwidth_bytes_per_s = link.bandwidth_bytes_per_s;
                       spec.latency_s = link.latency_s;
                     }});
  r.add_if_absent({.name = "scaled",
                   .summary = "emulated, one expert's transfer RATIO times its device compute time",
                   .read =
                       [](SpecReader& s, LinkSpec& spec) {
                         spec.kind = "emulated";
                         spec.scaled_ratio = s.get_double("ratio", 0);
                         FERRY_REQUIRE(spec.scaled_ratio > 0, "invalid --link '", spec.text,
                                       "': expected scaled:RATIO with a positive number");
                       },
                   .positional_key = "ratio"});
  r.add_if_absent({.name = "auto",
                   .summary = "file for a GGUF model (its experts stream from disk), else mixtral-a100",
                   .read = [](SpecReader&, LinkSpec& spec) { spec.kind = "auto"; }});
  r.add_if_absent({.name = "mixtral-a100",
                   .summary = "scaled:62, Mixtral-8x7B's transfer ratio on an A100 over PCIe 4.0 (docs/moe.md)",
                   .read = [](SpecReader&, LinkSpec& spec) {
                     spec.kind = "emulated";
                     spec.scaled_ratio = kMixtralA100TransferRatio;
                   }});
}

std::unique_ptr<Link> make_link(const LinkSpec& spec, const LinkSource& source) {
  FERRY_REQUIRE(spec.scaled_ratio <= 0, "--link ", spec.text, ": a scaled link needs resolve_scaled_link() first");
  const LinkEntry& entry = registry().at(spec.kind);
  FERRY_REQUIRE(entry.unavailable.empty(), "--link ", entry.name, ": ", entry.unavailable);
  FERRY_REQUIRE(entry.make != nullptr, "--link ", entry.name, ": a shorthand, made through parse_link_spec()",
                spec.kind == "auto" ? " and resolve_auto_link()" : "");
  return entry.make(spec, source);
}

const LinkEntry* find_link(const std::string& kind) { return registry().find(kind); }

const LinkEntry& link_entry(const std::string& kind) { return registry().at(kind); }

std::vector<std::string> link_kinds() { return registry().names(); }

std::string link_help() {
  register_builtin_links();
  return ferry::link_help(registry());
}

}  // namespace ferry::moe
