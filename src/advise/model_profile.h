// What the cost models need to know about one model: its gradient tensors (element counts in
// registration order, front layers first) and how long one worker's iteration computes, with
// when each tensor's gradient becomes ready in backward and when forward first reads it (for
// wait-free back-propagation's overlap). Measured by a short profile run of a zoo model
// (zoo_profiler.h) or read from a JSON profile file (the papers' models, other frameworks).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace ferry::advise {

struct TensorProfile {
  std::string name;            // "fc1.weight" (informative)
  std::size_t numel = 0;       // gradient elements (fp32 on the wire without a codec)
  double forward_start = 0;    // fraction of forward time elapsed when forward first reads it
  double backward_ready = 1;   // fraction of backward time elapsed when its gradient is complete
  std::vector<std::int64_t> shape;  // optional; low-rank codecs (PowerSGD) need rows x cols
};

struct ModelProfile {
  std::string name;            // zoo name or the file's "name"
  std::string device = "local";  // device the times were measured on (device_profile.h); "local" = this machine
  std::int64_t batch = 64;     // per-worker batch the times are for
  double forward_s = 0;        // one iteration's forward pass (loss included), one thread
  double backward_s = 0;       // its backward pass
  double update_s = 0;         // the optimizer step and gradient bookkeeping of one iteration
  std::string source;          // where the numbers come from (measured here, a paper, a vendor table)
  // Sustained fp32 TFLOP/s of the device the times are for (the profile run's one-thread GEMM
  // here); 0: take the device profile's number. Scales the times onto another device.
  double device_tflops = 0;
  // The profile run's own noise: (max - min) / median of its rounds' compute per iteration;
  // 0: not measured (a profile file). Two profiles of one model on an idle machine should agree
  // within it.
  double compute_noise = 0;
  std::vector<TensorProfile> tensors;

  std::size_t parameters() const;
  // fp32 gradient bytes of one iteration.
  double gradient_bytes() const { return 4.0 * static_cast<double>(parameters()); }
  // One worker's compute per iteration at `batch` (forward and backward scale linearly with the
  // batch, the update does not): the profile's own batch gives forward_s + backward_s + update_s.
  double compute_s(std::int64_t batch) const;
};

// Throws InvalidArgument naming `what` when a field is out of range (no tensors, a zero numel,
// a negative time, fractions outside [0, 1], batch < 1).
void validate(const ModelProfile& profile, const std::string& what);

nlohmann::json to_json(const ModelProfile& profile);
// FormatError naming `what` for a missing or mistyped field; then validate().
ModelProfile model_profile_from_json(const nlohmann::json& j, const std::string& what);
// Reads a profile file: IoError when it cannot be read, FormatError when it is not a profile.
ModelProfile load_model_profile(const std::string& path);
void save_model_profile(const ModelProfile& profile, const std::string& path);

}  // namespace ferry::advise
