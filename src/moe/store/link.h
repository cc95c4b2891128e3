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

#include "core/hardware.h"
#include "core/spec.h"
#include "moe/store/expert_cache.h"

namespace ferry::moe {

class HostPool;
class Checkpoint;

// A parsed --link value. The defaults are PCIe 4.0's figures (core/hardware.h).
struct LinkSpec {
  std::string kind = "emulated";          // the registry name of a link that is made: emulated, none, file, cuda
  double bandwidth_bytes_per_s = hardware::find_host_link("pcie4")->bandwidth_bytes_per_s;  // emulated pacing
                                          // (file: optional extra pacing, 0 = none)
  double latency_s = hardware::find_host_link("pcie4")->latency_s;  // fixed cost per transfer
  std::uint64_t chunk_bytes = 1u << 20;   // transfers proceed (and can be cancelled) chunk by chunk
  int reads_in_flight = 4;                // file: chunks read at once (1 = one read at a time, on the I/O thread)
  double scaled_ratio = 0;                // "scaled:R": > 0 until resolve_scaled_link() sets the bandwidth
  std::string text;                       // as the user wrote it, for reports
};

// Where a link finds an expert's bytes.
struct LinkSource {
  const HostPool* pool = nullptr;         // host copies (outlives the link: owned by the engine)
  const Checkpoint* checkpoint = nullptr; // for the file link (outlives the link: owned by the engine)
};

// Parses --link in the links' grammar (core/link_spec.h, training's --link too) over the link registry:
//   emulated:bandwidth=12GBps,latency=10us   emulated:12GBps,10us (positional rate)   emulated (PCIe 4.0)
//   file   file:2GBps,50us   file:reads=4   none   cuda   scaled:R (scaled:ratio=R)
// and the shorthands, entries of their own that read as one of the above: pcie3, pcie4, pcie5
// (emulated at core/hardware.h's figures), mixtral-a100 (= scaled:62), and BANDWIDTH[,LATENCY]
// alone (12GBps,10us = emulated:12GBps,10us). A scaled spec is resolved against the device compute
// time by resolve_scaled_link(). Throws InvalidArgument naming the text.
LinkSpec parse_link_spec(const std::string& text);

// `auto` (the `ferry moe` commands' default): the tier the experts really come from. The experts
// of a GGUF model computed as the file stores them (no --weights conversion) stream from its file
// (`file`: the deployment of a machine whose memory is the device tier, the file possibly larger
// than it); others cross the emulated link of the A100 deployment (`mixtral-a100`) from the host
// pool. Other specs are returned unchanged.
std::string resolve_auto_link(const std::string& text, bool gguf_as_stored);

// For a scaled spec: bandwidth such that one expert of `expert_bytes` takes `ratio` times
// `device_expert_s` to move (latency included). Other specs are returned unchanged.
LinkSpec resolve_scaled_link(const std::string& text, std::uint64_t expert_bytes, double device_expert_s);

// The transfer ratio of Mixtral-8x7B on an A100 over PCIe 4.0 (see docs/moe.md):
// 352 MB expert / 25 GB/s = 14.1 ms vs 352 MB / 1555 GB/s HBM = 0.226 ms of batch-1 compute.
constexpr double kMixtralA100TransferRatio = hardware::kA100TransferRatio;

class Link {
 public:
  virtual ~Link() = default;
  // Copies expert `id` (ExpertLayout::bytes() in the pool's weight format) into `dst`, starting after the `from`
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
  std::string name;                 // its spec name (LinkSpec::kind for a link that is made)
  std::string summary;              // one line for help texts
  std::string unavailable = {};     // why this build cannot make it ("" = it can), e.g. no CUDA
  LinkFactory make = {};            // null for a shorthand, which reads as another kind
  // Reads the entry's options into `spec` (a shorthand also sets the kind it stands for). Null:
  // the entry takes no options.
  std::function<void(SpecReader&, LinkSpec&)> read = {};
  std::string positional_key = {};  // "file:2GBps,50us" = "file:rate=2GBps,50us"
  bool bare_rate = false;           // BANDWIDTH[,LATENCY] alone reads as this kind (core/link_spec.h)
  // Capability: false when the link reads the experts from the checkpoint itself, so the engine
  // keeps no host copy of them (and none can run on the host).
  bool keeps_host_copy = true;
};

// Registers a link kind; InvalidArgument if the name is taken.
void register_link(LinkEntry entry);
// emulated, none, file and cuda (unavailable unless built with a CUDA libtorch), and the
// shorthands pcie3, pcie4, pcie5, scaled, mixtral-a100. Idempotent.
void register_builtin_links();
// Builds the link named by spec.kind; throws InvalidArgument for an unknown or unavailable kind.
std::unique_ptr<Link> make_link(const LinkSpec& spec, const LinkSource& source);
// nullptr for an unknown kind.
const LinkEntry* find_link(const std::string& kind);
// The entry of a kind; InvalidArgument listing the known ones for an unknown kind.
const LinkEntry& link_entry(const std::string& kind);
// Sorted; for --help.
std::vector<std::string> link_kinds();
// --link's help: the grammar and every kind with its summary (core/link_spec.h).
std::string link_help();

}  // namespace ferry::moe
