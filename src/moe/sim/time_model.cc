#include "moe/sim/time_model.h"

#include <algorithm>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/hardware.h"
#include "core/units.h"

namespace ferry::moe {

namespace {

// Parses a profiles.json's text; `path` names it in messages.
std::vector<HardwareProfile> parse_hardware_profiles(const std::string& text, const std::string& path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    FERRY_THROW(FormatError, "hardware profiles '", path, "': invalid JSON (", e.what(), ")");
  }
  if (!j.is_object() || !j.contains("profiles") || !j["profiles"].is_object())
    FERRY_THROW(FormatError, "hardware profiles '", path, "': expected an object with \"profiles\"");
  std::vector<HardwareProfile> out;
  for (const auto& [name, p] : j["profiles"].items()) {
    auto num = [&](const char* key, bool required = true, double dflt = 0) -> double {
      if (!p.contains(key)) {
        if (required) FERRY_THROW(FormatError, "hardware profiles '", path, "': profile '", name, "' lacks \"", key, "\"");
        return dflt;
      }
      if (!p[key].is_number() || p[key].get<double>() < 0)
        FERRY_THROW(FormatError, "hardware profiles '", path, "': ", name, ".", key, " must be a number of at least 0");
      return p[key].get<double>();
    };
    // Named entries of the hardware table supply the figures a profile does not give itself.
    auto entry = [&](const char* key, auto find) {
      if (!p.contains(key)) return decltype(find(std::string_view{})){nullptr};
      if (!p[key].is_string())
        FERRY_THROW(FormatError, "hardware profiles '", path, "': ", name, ".", key, " must be a name");
      const auto* e = find(p[key].get<std::string>());
      if (e == nullptr)
        FERRY_THROW(FormatError, "hardware profiles '", path, "': ", name, ".", key, " names '",
                    p[key].get<std::string>(), "', which src/core/hardware.h does not have");
      return e;
    };
    const hardware::Gpu* gpu = entry("gpu", hardware::find_gpu);
    const hardware::HostCpu* host = entry("host", hardware::find_host_cpu);
    const hardware::HostLink* link = entry("link", hardware::find_host_link);
    if (link == nullptr && gpu != nullptr) link = hardware::find_host_link(gpu->host_link);
    // A figure given in the profile (in the file's unit, times `scale`), else the named entry's,
    // else `fallback` when the figure is optional.
    auto figure = [&](const char* key, double scale, const void* named, double from_table, bool required = true,
                      double fallback = 0) -> double {
      if (!p.contains(key) && named != nullptr) return from_table;
      return num(key, required, fallback) * scale;
    };
    HardwareProfile h;
    h.name = name;
    h.description = p.value("description", "");
    if (p.contains("device_mem") || gpu == nullptr) {
      if (!p.contains("device_mem") || !p["device_mem"].is_string())
        FERRY_THROW(FormatError, "hardware profiles '", path, "': profile '", name,
                    "' lacks \"device_mem\" (e.g. \"40GiB\") or a \"gpu\"");
      h.device_mem_bytes = parse_bytes(p["device_mem"].get<std::string>());
    } else {
      h.device_mem_bytes = static_cast<std::uint64_t>(gpu->memory_bytes);
    }
    h.hbm_Bps = figure("hbm_GBps", 1e9, gpu, gpu ? gpu->hbm_bytes_per_s : 0);
    h.hbm_efficiency = num("hbm_efficiency", false, 0.8);
    h.tensor_flops = figure("tensor_TFLOPS", 1e12, gpu, gpu ? gpu->tensor_flops : 0);
    h.tensor_efficiency = num("tensor_efficiency", false, 0.6);
    h.launch_s = num("launch_us", false, 0) * 1e-6;
    h.link_Bps = figure("link_GBps", 1e9, link, link ? link->bandwidth_bytes_per_s : 0);
    h.link_latency_s = figure("link_latency_us", 1e-6, link, link ? link->latency_s : 0, false);
    h.host_Bps = figure("host_GBps", 1e9, host, host ? host->memory_bytes_per_s : 0);
    h.host_flops = figure("host_TFLOPS", 1e12, host, host ? host->flops : 0);
    if (h.hbm_Bps <= 0 || h.tensor_flops <= 0 || h.link_Bps <= 0 || h.host_Bps <= 0 || h.host_flops <= 0 ||
        h.hbm_efficiency <= 0 || h.tensor_efficiency <= 0)
      FERRY_THROW(FormatError, "hardware profiles '", path, "': profile '", name, "' has a zero bandwidth or FLOP rate");
    out.push_back(std::move(h));
  }
  return out;
}

}  // namespace

std::vector<HardwareProfile> load_hardware_profiles(const std::string& path) {
  std::ifstream in(path);
  if (!in) FERRY_THROW(IoError, "cannot read hardware profiles '", path, "'");
  return parse_hardware_profiles(std::string(std::istreambuf_iterator<char>(in), {}), path);
}

std::vector<HardwareProfile> builtin_hardware_profiles() {
  return parse_hardware_profiles(builtin_hardware_profiles_json(), "built-in src/moe/sim/profiles.json");
}

const HardwareProfile& find_profile(const std::vector<HardwareProfile>& profiles, const std::string& name) {
  std::string known;
  for (const auto& p : profiles) {
    if (p.name == name) return p;
    known += (known.empty() ? "" : ", ") + p.name;
  }
  FERRY_THROW(InvalidArgument, "unknown hardware profile '", name, "' (known: ", known, ")");
}

namespace {
std::vector<ModelShape> shapes() {
  // From the models' config.json on the Hugging Face hub.
  ModelShape mixtral{"mixtral-8x7b", 32, 8, 2, 4096, 14336, 32, 8, 128, 32000, 2};
  ModelShape granite{"granite-3.0-1b-a400m", 24, 32, 8, 1024, 512, 16, 8, 64, 49155, 2};
  return {mixtral, granite};
}
}  // namespace

ModelShape model_shape(const std::string& name) {
  for (const auto& s : shapes())
    if (s.name == name) return s;
  std::string known;
  for (const auto& s : shapes()) known += (known.empty() ? "" : ", ") + s.name;
  FERRY_THROW(InvalidArgument, "unknown model shape '", name, "' (known: ", known, ")");
}

std::vector<std::string> model_shape_names() {
  std::vector<std::string> out;
  for (const auto& s : shapes()) out.push_back(s.name);
  return out;
}

TimeModel::TimeModel(HardwareProfile hw, ModelShape shape, int context_tokens)
    : hw_(std::move(hw)), shape_(std::move(shape)), context_tokens_(context_tokens) {
  FERRY_REQUIRE_GE(context_tokens_, 1, "context_tokens");
}

double TimeModel::kernel_s(double bytes, double flops) const {
  return std::max(bytes / (hw_.hbm_Bps * hw_.hbm_efficiency), flops / (hw_.tensor_flops * hw_.tensor_efficiency));
}

double TimeModel::device_expert_s(int tokens) const {
  return hw_.launch_s + kernel_s(shape_.expert_bytes(), 2.0 * shape_.expert_params() * std::max(1, tokens));
}

double TimeModel::device_layer_s(int batch) const {
  const double dense = shape_.dense_layer_params();
  const double kv = static_cast<double>(batch) * context_tokens_ * shape_.kv_bytes_per_token_layer();
  return hw_.launch_s + kernel_s(dense * shape_.bytes_per_param, 2.0 * dense * batch) +
         kv / (hw_.hbm_Bps * hw_.hbm_efficiency);
}

double TimeModel::step_s(int batch) const {
  const double head = static_cast<double>(shape_.vocab) * shape_.hidden;
  return kernel_s(head * shape_.bytes_per_param, 2.0 * head * batch);
}

double TimeModel::transfer_s() const { return hw_.link_latency_s + shape_.expert_bytes() / hw_.link_Bps; }

double TimeModel::host_token_s() const {
  return std::max(shape_.expert_bytes() / hw_.host_Bps, 2.0 * shape_.expert_params() / hw_.host_flops);
}

double TimeModel::expert_budget_bytes(std::uint64_t device_mem_bytes, int batch) const {
  const double kv = static_cast<double>(batch) * context_tokens_ * shape_.layers * shape_.kv_bytes_per_token_layer();
  return static_cast<double>(device_mem_bytes) - shape_.non_expert_bytes() - kv;
}

CostModel TimeModel::cost_model(int batch) const {
  const int routed = batch * shape_.top_k;
  const int active = std::min(shape_.experts, routed);
  CostModel c;
  c.transfer_s = transfer_s();
  c.device_expert_s = device_expert_s((routed + active - 1) / std::max(1, active));
  c.host_token_s = host_token_s();
  c.device_layer_s = device_layer_s(batch);
  return c;
}

}  // namespace ferry::moe
