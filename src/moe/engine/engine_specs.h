// The engine's text specs: the compute-speed profile and the device-memory budget, as the command
// line and the server write them (the experts' weight format: quant::parse_weight_format).
#pragma once

#include <cstdint>
#include <string>

namespace ferry::moe {

// How long compute takes on the emulated device and on the host. Compute runs on this CPU either
// way; a profile pads each expert call to at least the profiled time, so that placement decisions
// are judged as on the real machine.
struct ComputeProfile {
  std::string name = "none";   // "none": no padding (real CPU times)
  double device_expert_s = 0;  // device time of one expert call (memory-bound: flat in tokens for small batches)
  double host_token_s = 0;     // host time per token routed to one expert
};

// --compute, a spec (core/spec.h) of one of the kinds compute_help() lists:
//   none                                      no padding
//   a100                                      device expert 100 us, host 1 ms per token (10x: host
//                                             memory bandwidth vs HBM, docs/moe.md)
//   paced:device_expert=100us,host_token=1ms  given times; also paced:100us,1ms and 100us,1ms alone
//   auto                                      parses as its name only (resolve_auto_compute)
// Throws InvalidArgument naming --compute.
ComputeProfile parse_compute_profile(const std::string& text);
// `auto` (the `ferry moe` commands' default): "a100" under an emulated link (the deployment it
// emulates, and what a scaled link is scaled by), "none" (this CPU's real times) under a real one
// (file, cuda) or none. Other texts are returned unchanged.
std::string resolve_auto_compute(const std::string& text, const std::string& link_kind);
// --compute's help: the grammar and every kind with its summary.
std::string compute_help();

// A parsed --device-mem: "auto", bytes ("256MiB", core/units.h) or a percentage of all routed-expert
// bytes ("30%").
struct DeviceMem {
  bool automatic = false;   // "auto": the memory plan chooses (memory_plan.h)
  std::uint64_t bytes = 0;  // an explicit budget, when percent is 0
  double percent = 0;       // in (0, 100]: that share of all experts' bytes
  // The budget for a model whose routed experts take `total_expert_bytes` (not for auto).
  std::uint64_t budget_bytes(std::uint64_t total_expert_bytes) const;
};
// Throws InvalidArgument naming --device-mem and the text.
DeviceMem parse_device_mem(const std::string& text);

}  // namespace ferry::moe
