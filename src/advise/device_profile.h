// Compute devices the cost model can put a worker on: this machine's cores (measured, shared
// by every rank) or one accelerator per worker as in the papers' clusters. A model profile's
// times are for the device it names; on another device they scale by the ratio of the two
// devices' sustained fp32 training throughput. Every built-in number states its source.
#pragma once

#include <string>
#include <vector>

namespace ferry::advise {

struct DeviceProfile {
  std::string name;     // "local", "v100-sxm2", ...
  std::string summary;  // one line for --help
  // Sustained fp32 throughput of training kernels, TFLOP/s. "local": measured by the profile
  // run (one thread's GEMM), so 0 here.
  double sustained_tflops = 0;
  // Workers share this machine's cores (the calibrated contention applies); false: every
  // worker has its own device and host (the papers' clusters).
  bool shared_cores = false;
  // Host <-> device copy bandwidth for staging gradients and weights (bytes/s); 0: none (CPU).
  double staging_bytes_per_s = 0;
  std::string source;   // where the numbers come from
};

// The built-in profiles, in registry order.
const std::vector<DeviceProfile>& builtin_device_profiles();
// A built-in name or a JSON file {"name","sustained_tflops","shared_cores","staging_bytes_per_s",
// "source"}. InvalidArgument naming the known profiles for an unknown name; IoError/FormatError
// for an unreadable or malformed file.
DeviceProfile device_profile(const std::string& name_or_file);
std::vector<std::string> device_profile_names();

}  // namespace ferry::advise
