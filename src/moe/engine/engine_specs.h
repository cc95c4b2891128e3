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

// "none"; "a100": device expert 100 us, host 1 ms per token (10x: host memory bandwidth vs HBM, see
// docs/moe.md); or "DEVICE,HOST_PER_TOKEN" such as "100us,1ms"; "auto" parses as its name only
// (resolve_auto_compute). Throws InvalidArgument.
ComputeProfile parse_compute_profile(const std::string& text);
// `auto` (the `ferry moe` commands' default): "a100" under an emulated link (the deployment it
// emulates, and what a scaled link is scaled by), "none" (this CPU's real times) under a real one
// (file, cuda) or none. Other texts are returned unchanged.
std::string resolve_auto_compute(const std::string& text, const std::string& link_kind);

// "256MiB" (bytes) or "30%" (of all routed-expert bytes). Throws InvalidArgument naming the text.
std::uint64_t parse_device_mem(const std::string& text, std::uint64_t total_expert_bytes);

}  // namespace ferry::moe
