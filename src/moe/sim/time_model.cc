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

double ModelShape::attention_params() const {
  const double H = hidden;
  if (!has_mla()) {
    const double kv = static_cast<double>(kv_heads) * head_dim;
    return H * (heads * head_dim) * 2 + 2.0 * H * kv;
  }
  const double q_head = head_dim + mla.rope_dim, q_lora = mla.q_lora_rank, kv_lora = mla.kv_lora_rank;
  const double q = q_lora > 0 ? H * q_lora + q_lora + q_lora * heads * q_head : H * heads * q_head;
  const double kv = H * (kv_lora + mla.rope_dim) + kv_lora + kv_lora * heads * (head_dim + mla.v_head_dim);
  return q + kv + static_cast<double>(heads) * mla.v_head_dim * H;
}

double ModelShape::moe_layer_params() const {
  return attention_params() + static_cast<double>(experts) * hidden + (router_bias ? experts : 0) +
         static_cast<double>(moe::expert_params(hidden, shared_ffn));
}

double ModelShape::dense_layer_params() const {
  return attention_params() + static_cast<double>(moe::expert_params(hidden, dense_ffn));
}

double ModelShape::non_expert_bytes() const {
  return (moe_layers() * moe_layer_params() + dense_layers * dense_layer_params() + 2.0 * vocab * hidden) *
         bytes_per_param;
}

double ModelShape::kv_bytes_per_token_layer() const {
  if (has_mla()) return static_cast<double>(mla.kv_lora_rank + mla.rope_dim) * bytes_per_param;
  return 2.0 * kv_heads * head_dim * bytes_per_param;
}

double ModelShape::attention_flops_per_cached_token() const {
  if (has_mla()) return 2.0 * heads * (2.0 * mla.kv_lora_rank + mla.rope_dim);
  return 4.0 * heads * head_dim;
}

namespace {
std::vector<ModelShape> shapes() {
  // From the models' config.json on the Hugging Face hub.
  ModelShape mixtral{.name = "mixtral-8x7b", .layers = 32, .experts = 8, .top_k = 2, .hidden = 4096, .ffn = 14336,
                     .heads = 32, .kv_heads = 8, .head_dim = 128, .vocab = 32000};
  ModelShape granite{.name = "granite-3.0-1b-a400m", .layers = 24, .experts = 32, .top_k = 8, .hidden = 1024,
                     .ffn = 512, .heads = 16, .kv_heads = 8, .head_dim = 64, .vocab = 49155};
  // 61 layers, the first 3 dense; top-8 of 256 within the 4 best of 8 groups (the routing is the
  // trace's), 1 shared expert; MLA; the multi-token-prediction layer is not run in decoding.
  ModelShape deepseek_v3{.name = "deepseek-v3", .layers = 61, .experts = 256, .top_k = 8, .hidden = 7168,
                         .ffn = 2048, .heads = 128, .kv_heads = 128, .head_dim = 128, .vocab = 129280,
                         .dense_layers = 3, .dense_ffn = 18432, .shared_ffn = 2048, .router_bias = true,
                         .mla = {.q_lora_rank = 1536, .kv_lora_rank = 512, .rope_dim = 64, .v_head_dim = 128}};
  return {mixtral, granite, deepseek_v3};
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

double TimeModel::attention_s(int batch) const {
  const double cached = static_cast<double>(batch) * context_tokens_;
  return kernel_s(cached * shape_.kv_bytes_per_token_layer(), cached * shape_.attention_flops_per_cached_token());
}

double TimeModel::device_layer_s(int batch) const {
  const double dense = shape_.moe_layer_params();
  return hw_.launch_s + kernel_s(dense * shape_.bytes_per_param, 2.0 * dense * batch) + attention_s(batch);
}

double TimeModel::dense_layers_s(int batch) const {
  if (shape_.dense_layers == 0) return 0;
  const double dense = shape_.dense_layer_params();
  return shape_.dense_layers *
         (hw_.launch_s + kernel_s(dense * shape_.bytes_per_param, 2.0 * dense * batch) + attention_s(batch));
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
