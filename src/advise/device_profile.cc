#include "advise/device_profile.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/hardware.h"
#include "core/registry.h"

namespace ferry::advise {
namespace {

// Sustained = vendor peak fp32 x 0.58, the fraction V100 reaches on ResNet-50 fp32 training:
// about 370 images/s x 3 x 8.2 GFLOP per image (forward 4.1 GMAC; backward twice the forward)
// = 9.1 TFLOP/s of its 15.7 peak (NVIDIA DeepLearningExamples, ResNet-50 v1.5 training
// performance tables, fp32, batch 256; not re-measured here). The same fraction is assumed for
// the other GPUs. Peaks and staging links are those of the hardware table (core/hardware.h).
constexpr double kSustainedFraction = 0.58;

// An accelerator per worker: `gpu` of the hardware table, staged over its host link.
DeviceProfile accelerator(const char* name, const char* summary, std::string_view gpu_name) {
  const hardware::Gpu* gpu = hardware::find_gpu(gpu_name);
  const hardware::HostLink* link = hardware::find_host_link(gpu->host_link);
  return {name, summary, gpu->fp32_flops / 1e12 * kSustainedFraction, false, link->bandwidth_bytes_per_s,
          std::string(gpu->source) + "; " + std::string(link->source)};
}

Registry<DeviceProfile>& device_registry() {
  static Registry<DeviceProfile>* r = [] {
    auto* reg = new Registry<DeviceProfile>("--device");
    reg->add({"local", "this machine's CPU cores, shared by every rank (calibrated contention)", 0, true, 0,
              "measured: the profile run's GEMM and training iterations on this machine"});
    reg->add(accelerator("k80", "NVIDIA Tesla K80, one GK210 die per worker, PCIe 3.0", "k80"));
    reg->add(accelerator("p100", "NVIDIA Tesla P100 PCIe 16GB, PCIe 3.0", "p100-pcie-16gb"));
    reg->add(accelerator("titan-xp", "NVIDIA Titan Xp, PCIe 3.0", "titan-xp"));
    reg->add(accelerator("v100", "NVIDIA Tesla V100 SXM2 16GB, PCIe 3.0 to the host", "v100-sxm2-16gb"));
    reg->add(accelerator("a100", "NVIDIA A100 SXM4 40GB, PCIe 4.0 to the host", "a100-40gb"));
    return reg;
  }();
  return *r;
}

}  // namespace

const std::vector<DeviceProfile>& builtin_device_profiles() {
  static const std::vector<DeviceProfile> all(device_registry().entries().begin(), device_registry().entries().end());
  return all;
}

std::vector<std::string> device_profile_names() { return device_registry().names(); }

DeviceProfile device_profile(const std::string& name_or_file) {
  if (const DeviceProfile* d = device_registry().find(name_or_file)) return *d;
  if (name_or_file.find(".json") == std::string::npos && !std::filesystem::exists(name_or_file))
    return device_registry().at(name_or_file);  // throws: unknown --device, listing the known ones
  std::ifstream in(name_or_file);
  if (!in) FERRY_THROW(IoError, "cannot read device profile file ", name_or_file);
  std::stringstream text;
  text << in.rdbuf();
  const auto j = nlohmann::json::parse(text.str(), nullptr, false);
  if (j.is_discarded() || !j.is_object())
    FERRY_THROW(FormatError, "device profile file ", name_or_file, " is not a JSON object");
  DeviceProfile d;
  try {
    d.name = j.at("name").get<std::string>();
    d.sustained_tflops = j.at("sustained_tflops").get<double>();
    d.shared_cores = j.value("shared_cores", false);
    d.staging_bytes_per_s = j.value("staging_bytes_per_s", 0.0);
    d.source = j.value("source", std::string("file ") + name_or_file);
  } catch (const nlohmann::json::exception& e) {
    FERRY_THROW(FormatError, "device profile file ", name_or_file, ": needs name and sustained_tflops (", e.what(), ")");
  }
  FERRY_REQUIRE_FINITE(d.sustained_tflops, >, 0, "device profile file ", name_or_file, ": sustained_tflops");
  FERRY_REQUIRE_OP(d.staging_bytes_per_s, >=, 0, "device profile file ", name_or_file, ": staging_bytes_per_s");
  return d;
}

}  // namespace ferry::advise
