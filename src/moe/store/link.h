// A Link moves one expert from the host tier to the device tier. Implementations are chosen by
// name from a registry: emulated (memcpy paced to bandwidth + latency), file (O_DIRECT reads of
// the checkpoint), cuda (copy stream, pinned staging; only in CUDA builds), none (unpaced memcpy).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "moe/store/expert_cache.h"

namespace ferry::moe {

class HostPool;
class Checkpoint;

// A parsed --link value.
struct LinkSpec {
  std::string kind = "emulated";          // registry name: emulated, none, file, cuda
  double bandwidth_bytes_per_s = 25e9;    // emulated pacing (file: optional extra pacing, 0 = none)
  double latency_s = 10e-6;               // fixed cost per transfer
  std::uint64_t chunk_bytes = 1u << 20;   // transfers proceed (and can be cancelled) chunk by chunk
  double scaled_ratio = 0;                // "scaled:R": > 0 until resolve_scaled_link() sets the bandwidth
  std::string text;                       // as the user wrote it, for reports
};

// Where a link finds an expert's bytes.
struct LinkSource {
  const HostPool* pool = nullptr;         // host copies (outlives the link: owned by the engine)
  const Checkpoint* checkpoint = nullptr; // for the file link (outlives the link: owned by the engine)
};

// Parses "pcie3", "pcie4", "pcie5", "12GBps,10us", "emulated:12GBps,10us", "none", "file",
// "file:2GBps,50us", "cuda". BANDWIDTH[,LATENCY] is the grammar of training's --link too
// (core/units.h, parse_bandwidth_latency). "scaled:R" (and "mixtral-a100" = scaled:62) is resolved
// against the device compute time by resolve_scaled_link(). Throws InvalidArgument naming the text.
LinkSpec parse_link_spec(const std::string& text);

// For a scaled spec: bandwidth such that one expert of `expert_bytes` takes `ratio` times
// `device_expert_s` to move (latency included). Other specs are returned unchanged.
LinkSpec resolve_scaled_link(const std::string& text, std::uint64_t expert_bytes, double device_expert_s);

// The transfer ratio of Mixtral-8x7B on an A100 over PCIe 4.0 (see docs/moe.md):
// 352 MB expert / 25 GB/s = 14.1 ms vs 352 MB / 1555 GB/s HBM = 0.226 ms of batch-1 compute.
constexpr double kMixtralA100TransferRatio = 62.0;

class Link {
 public:
  virtual ~Link() = default;
  // Copies expert `id` (ExpertLayout::bytes() of float32) into `dst`, starting after the `from`
  // bytes an earlier, stopped call already moved (0 for a new transfer; the link's own order).
  // Runs on the I/O thread only. Checks `stop` between chunks (a cancel, or a demand load
  // pre-empting this transfer); returns the bytes moved by this call.
  virtual std::uint64_t transfer(ExpertId id, std::byte* dst, std::uint64_t from, const std::atomic<bool>& stop) = 0;
  // Expected seconds for one transfer of `bytes` (the policies' cost model).
  virtual double estimate_s(std::uint64_t bytes) const = 0;
  // "emulated 25 GB/s + 10 us" for reports.
  virtual std::string describe() const = 0;
};

using LinkFactory = std::function<std::unique_ptr<Link>(const LinkSpec&, const LinkSource&)>;

// A link kind's registry entry (core/registry.h).
struct LinkEntry {
  std::string name;                 // LinkSpec::kind
  std::string summary;              // one line for help texts
  std::string unavailable = {};     // why this build cannot make it ("" = it can), e.g. no CUDA
  LinkFactory make = {};
};

// Registers a link kind; InvalidArgument if the name is taken.
void register_link(LinkEntry entry);
// emulated, none, file and cuda (unavailable unless built with a CUDA libtorch). Idempotent.
void register_builtin_links();
// Builds the link named by spec.kind; throws InvalidArgument for an unknown or unavailable kind.
std::unique_ptr<Link> make_link(const LinkSpec& spec, const LinkSource& source);
// nullptr for an unknown kind.
const LinkEntry* find_link(const std::string& kind);
// Sorted; for --help.
std::vector<std::string> link_kinds();

}  // namespace ferry::moe
