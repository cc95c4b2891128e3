// The simulator's hardware: profiles (src/moe/sim/profiles.json, whose figures come from the one
// hardware table, core/hardware.h, with their sources), model shapes, and the time model — every formula the simulator uses for compute and transfer
// time is in this file pair.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "moe/sched/cost_model.h"
#include "moe/store/expert_layout.h"

namespace ferry::moe {

struct HardwareProfile {
  std::string name, description;
  std::uint64_t device_mem_bytes = 0;  // the GPU's memory
  double hbm_Bps = 0;                  // device memory bandwidth, peak (bytes/s)
  double hbm_efficiency = 0.8;         // achieved fraction in memory-bound kernels
  double tensor_flops = 0;             // dense bf16/fp16 tensor-core peak (FLOP/s)
  double tensor_efficiency = 0.6;      // achieved fraction in compute-bound GEMMs
  double launch_s = 0;                 // fixed cost of one kernel sequence (per expert call, per layer)
  double link_Bps = 0;                 // achieved pinned host -> device bandwidth
  double link_latency_s = 0;
  double host_Bps = 0;                 // host memory bandwidth streamed by the expert kernel
  double host_flops = 0;               // host sustained FLOP/s
};

struct ModelShape {
  std::string name;
  int layers = 0, experts = 0, top_k = 0;
  int hidden = 0, ffn = 0;              // model width, expert FFN width
  int heads = 0, kv_heads = 0, head_dim = 0, vocab = 0;
  double bytes_per_param = 2;           // the dense weights and the KV cache: bf16
  // The routed experts' weight format (moe/quant: BF16 as shipped, or a GGUF block format).
  quant::QuantType expert_format = quant::QuantType::kBF16;
  double expert_params() const { return static_cast<double>(moe::expert_params(hidden, ffn)); }  // w1, w2, w3
  // One expert in its format (ExpertLayout: the size the engine's pool and links use).
  double expert_bytes() const { return static_cast<double>(ExpertLayout{hidden, ffn, expert_format}.bytes()); }
  // Attention (q, k, v, o) and router of one layer.
  double dense_layer_params() const {
    const double kv = static_cast<double>(kv_heads) * head_dim;
    return static_cast<double>(hidden) * (heads * head_dim) * 2 + 2.0 * hidden * kv + static_cast<double>(experts) * hidden;
  }
  // Everything but the routed experts: layers' dense parts, embedding and LM head (always resident).
  double non_expert_bytes() const { return (layers * dense_layer_params() + 2.0 * vocab * hidden) * bytes_per_param; }
  // KV cache of one token in one layer.
  double kv_bytes_per_token_layer() const { return 2.0 * kv_heads * head_dim * bytes_per_param; }
};

// Profiles from a profiles.json (see src/moe/sim/profiles.json). Throws IoError / FormatError naming
// the file and the field.
std::vector<HardwareProfile> load_hardware_profiles(const std::string& path);
// The profiles of src/moe/sim/profiles.json as built into the binary (the default everywhere).
std::vector<HardwareProfile> builtin_hardware_profiles();
// That file's text (generated: builtin_profiles.cc.in).
const char* builtin_hardware_profiles_json();
// Throws InvalidArgument naming the unknown profile and listing the known ones.
const HardwareProfile& find_profile(const std::vector<HardwareProfile>& profiles, const std::string& name);
// "mixtral-8x7b", "granite-3.0-1b-a400m". Throws InvalidArgument listing the known shapes.
ModelShape model_shape(const std::string& name);
std::vector<std::string> model_shape_names();

// The formulas. A GPU kernel is bound by whichever is slower, reading its weights or its FLOPs:
//   device_expert_s(n) = launch + max(expert_bytes / (hbm x eff_m), 2 x expert_params x n / (tensor x eff_c))
//   device_layer_s(b)  = launch + max(dense_bytes / (hbm x eff_m), 2 x dense_params x b / (tensor x eff_c))
//                        + b x context x kv_bytes_per_token_layer / (hbm x eff_m)      (attention reads the KV cache)
//   step_s(b)          = LM head: max(V x H x bytes / (hbm x eff_m), 2 x V x H x b / (tensor x eff_c))
//   transfer_s         = link_latency + expert_bytes / link_bandwidth
//   host_expert_s(n)   = n x max(expert_bytes / host_bandwidth, 2 x expert_params / host_flops)
// The host term is linear in tokens (as Fiddler measures for small batches: a CPU GEMV per token
// streams the weights); the transfer is not.
class TimeModel {
 public:
  TimeModel(HardwareProfile hw, ModelShape shape, int context_tokens);
  double device_expert_s(int tokens) const;
  double device_layer_s(int batch) const;
  double step_s(int batch) const;
  double transfer_s() const;
  double host_token_s() const;
  double host_expert_s(int tokens) const { return tokens * host_token_s(); }
  // Device bytes left for routed experts: device memory - non-expert weights - KV cache of the batch.
  double expert_budget_bytes(std::uint64_t device_mem_bytes, int batch) const;
  // What a policy weighs at this batch (device expert time at the mean tokens per active expert).
  CostModel cost_model(int batch) const;
  const HardwareProfile& hardware() const { return hw_; }
  const ModelShape& shape() const { return shape_; }

 private:
  double kernel_s(double bytes, double flops) const;
  HardwareProfile hw_;
  ModelShape shape_;
  int context_tokens_;
};

}  // namespace ferry::moe
