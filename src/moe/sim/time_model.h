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

// Multi-head latent attention (DeepSeek-V2/V3): queries through a rank-q_lora_rank bottleneck
// (q_a, its norm, q_b; none when 0), keys and values from a rank-kv_lora_rank latent (kv_a, which
// also gives the shared rope key, its norm, kv_b), o_proj. Per head the query and key have
// ModelShape::head_dim (no rope) + rope_dim dims, the value v_head_dim. The KV cache holds the
// latent and the rope key, attended in the absorbed form (as ferry's engine and llama.cpp do).
struct MlaShape {
  int q_lora_rank = 0;   // 0: q_proj straight from the hidden state
  int kv_lora_rank = 0;  // 0: not MLA (plain multi-head / grouped-query attention)
  int rope_dim = 0;      // qk_rope_head_dim
  int v_head_dim = 0;
};

// A model as the simulator sees it. `layers` are decoder layers: the first `dense_layers` have a
// dense MLP, the others routed experts (the MoE layers a routing trace records). Everything but
// the routed experts is resident on the device.
struct ModelShape {
  std::string name;
  int layers = 0, experts = 0, top_k = 0;
  int hidden = 0, ffn = 0;              // model width, expert FFN width
  int heads = 0, kv_heads = 0, head_dim = 0, vocab = 0;
  double bytes_per_param = 2;           // the dense weights and the KV cache: bf16
  // The routed experts' weight format (moe/quant: BF16 as shipped, or a GGUF block format).
  quant::QuantType expert_format = quant::QuantType::kBF16;
  int dense_layers = 0;                 // leading decoder layers with a dense MLP instead of experts
  int dense_ffn = 0;                    // their MLP width
  int shared_ffn = 0;                   // shared expert(s) of every MoE layer, their summed width (0: none)
  bool router_bias = false;             // the router's selection bias (E values per MoE layer)
  MlaShape mla = {};                    // kv_lora_rank 0: grouped-query attention (heads, kv_heads, head_dim)

  bool has_mla() const { return mla.kv_lora_rank > 0; }
  int moe_layers() const { return layers - dense_layers; }
  double expert_params() const { return static_cast<double>(moe::expert_params(hidden, ffn)); }  // w1, w2, w3
  // One expert in its format (ExpertLayout: the size the engine's pool and links use).
  double expert_bytes() const { return static_cast<double>(ExpertLayout{hidden, ffn, expert_format}.bytes()); }
  // Attention of one layer: q, k, v, o; or MLA's q_a, its norm, q_b, kv_a, its norm, kv_b, o.
  double attention_params() const;
  // An MoE layer but its routed experts: attention, router (and its bias), shared expert.
  double moe_layer_params() const;
  // A leading dense layer: attention and its MLP.
  double dense_layer_params() const;
  // Everything but the routed experts: the layers' dense parts, embedding and LM head (always resident).
  double non_expert_bytes() const;
  // KV cache of one token in one layer: keys and values of the kv heads, or MLA's latent and rope key.
  double kv_bytes_per_token_layer() const;
  // Attention FLOPs of one token against one cached token in one layer: scores and weighted values
  // over every head (MLA, absorbed: against the latent and rope key, values in the latent).
  double attention_flops_per_cached_token() const;
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
// "mixtral-8x7b", "granite-3.0-1b-a400m", "deepseek-v3". Throws InvalidArgument listing the known shapes.
ModelShape model_shape(const std::string& name);
std::vector<std::string> model_shape_names();

// The formulas. A GPU kernel is bound by whichever is slower, reading its weights or its FLOPs:
//   kernel(bytes, flops) = max(bytes / (hbm x eff_m), flops / (tensor x eff_c))
//   device_expert_s(n) = launch + kernel(expert_bytes, 2 x expert_params x n)
//   attention_s(b)     = kernel(b x context x kv_bytes_per_token_layer, b x context x attention_flops_per_cached_token)
//   device_layer_s(b)  = launch + kernel(moe_layer_params x bytes, 2 x moe_layer_params x b) + attention_s(b)
//                        (an MoE layer before its routed experts: attention, router, shared expert)
//   dense_layers_s(b)  = dense_layers x (launch + kernel(dense_layer_params x bytes, 2 x dense_layer_params x b)
//                        + attention_s(b))                         (the leading dense layers of a step)
//   step_s(b)          = LM head: kernel(V x H x bytes, 2 x V x H x b)
//   transfer_s         = link_latency + expert_bytes / link_bandwidth
//   host_expert_s(n)   = n x max(expert_bytes / host_bandwidth, 2 x expert_params / host_flops)
// with kv_bytes_per_token_layer = 2 x kv_heads x head_dim x bytes, or (kv_lora_rank + rope_dim) x
// bytes under MLA; attention_flops_per_cached_token = 4 x heads x head_dim, or under MLA
// 2 x heads x (2 x kv_lora_rank + rope_dim) (scores against latent and rope key, values in the
// latent; the absorbed projections are weights, counted in moe_layer_params). Grouped-query
// attention is bound by the cache's bytes, MLA's by its FLOPs.
// The host term is linear in tokens (as Fiddler measures for small batches: a CPU GEMV per token
// streams the weights); the transfer is not.
class TimeModel {
 public:
  TimeModel(HardwareProfile hw, ModelShape shape, int context_tokens);
  double device_expert_s(int tokens) const;
  double device_layer_s(int batch) const;
  double dense_layers_s(int batch) const;
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
  double attention_s(int batch) const;
  HardwareProfile hw_;
  ModelShape shape_;
  int context_tokens_;
};

}  // namespace ferry::moe
