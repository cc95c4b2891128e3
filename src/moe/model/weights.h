// Non-expert weights (always resident) and per-expert weights as libtorch tensors: float32, or
// (a GGUF file's projections in a block format ferry computes on) the blocks as stored.
// Internal to ferry_moe: includes libtorch types.
#pragma once

#include <vector>

#include <torch/types.h>

#include "moe/model/checkpoint.h"
#include "moe/quant/quant_type.h"

namespace ferry::moe {

// A projection's weight [rows, cols]: float32 (`values` is that tensor), or a GGUF block format
// as the file stores it (`values` holds its bytes, uint8, in the kernels' layout:
// moe/quant/row_groups.h), computed on by moe/quant's kernels (decoder_ops.h, project).
struct Weight {
  torch::Tensor values;
  quant::QuantType type = quant::QuantType::kF32;
  std::int64_t rows = 0, cols = 0;

  Weight() = default;
  Weight(torch::Tensor f32)  // NOLINT(google-explicit-constructor): a float32 tensor is a weight
      : values(std::move(f32)), rows(values.defined() ? values.size(0) : 0), cols(values.defined() ? values.size(1) : 0) {}
  bool defined() const { return values.defined(); }
  // The weight as float32 [rows, cols] (dequantized when stored in blocks).
  torch::Tensor to_float() const;
  // Rows `ids` (int64, each in [0, rows)) as float32 [ids, cols]: an embedding lookup, which
  // dequantizes only the rows it reads.
  torch::Tensor select_rows(const torch::Tensor& ids) const;
};

struct LayerWeights {
  torch::Tensor attn_norm, ffn_norm;  // [H]
  Weight wq, wk, wv, wo;              // [heads*D, H], [kv*D, H], [kv*D, H], [H, heads*D]
  torch::Tensor bq, bk, bv, bo;       // optional biases (undefined when absent)
  torch::Tensor q_norm, k_norm;       // q/k RMSNorm weights: [D] per head, or [heads*D] / [kv*D] whole
  // MLA (config.mla(); wq is then q_proj, or undefined with a q bottleneck; wk, wv undefined):
  Weight wq_a, wq_b;                  // [q_lora, H], [heads*D, q_lora] (q_lora_rank > 0)
  torch::Tensor q_a_norm;             // [q_lora]
  Weight wkv_a;                       // [kv_lora + rope, H]: the latent and the shared rotary key
  torch::Tensor kv_a_norm;            // [kv_lora]
  Weight wk_b, wv_b;                  // kv_b_proj's parts, head after head: [heads * kv_lora, nope]
                                      // (each head's key part transposed), [heads * v, kv_lora]
  torch::Tensor router;               // [E, H] (undefined in a dense layer)
  torch::Tensor router_bias;          // [E], the choice's bias (config.router_bias; else undefined)
  torch::Tensor router_logit_bias;    // [E], added to the router's logits (config.router_logit_bias)
  torch::Tensor sinks;                // [heads], the attention sinks' logits (config.attn_sinks)
  // The routed experts' biases (config.expert_bias), one row per expert: [E, I], [E, I], [E, H].
  // Resident with the dense weights, whatever tier an expert's weights are in: 0.3 % of an
  // expert's bytes (gpt-oss-20b: 1.1 MB a layer), so a load or a host/disk read moves the
  // projections only and every copy of an expert meets the same biases.
  torch::Tensor expert_b1, expert_b3, expert_b2;
  Weight sw1, sw3, sw2;               // shared expert (undefined when the model has none)
  torch::Tensor sgate;                // [1, H] shared-expert gate (optional)
  Weight dw1, dw3, dw2;               // a dense layer's MLP (undefined in an MoE layer)
};

struct DenseWeights {
  MoeConfig config;
  Weight embed;              // [V, H], as stored (a lookup dequantizes the rows it reads)
  torch::Tensor final_norm;  // [H]
  Weight lm_head;            // [V, H]
  std::vector<LayerWeights> layers;
};

struct ExpertWeights {
  torch::Tensor w1, w3, w2;  // gate [I, H], up [I, H], down [H, I]
};

// Reads `name` (checking the shape) as a float32 tensor.
torch::Tensor load_tensor_f32(const Checkpoint& ck, const std::string& name, const std::vector<std::int64_t>& shape);
// Reads projection `name` [rows, cols]: with `as_stored`, as stored when a GGUF file holds it in
// a block format the kernels compute on (not F16/BF16, which the float32 GEMM serves better);
// else float32.
Weight load_weight(const Checkpoint& ck, const std::string& name, std::int64_t rows, std::int64_t cols,
                   bool as_stored = true);
// Everything but the routed experts. The norms, biases and routers are float32; the embedding
// and the projections are load_weight's.
DenseWeights load_dense_weights(const Checkpoint& ck, bool as_stored = true);
// Routed expert `expert` of MoE layer `moe_layer` (MoeConfig::decoder_layer maps it to its block).
ExpertWeights load_expert_weights(const Checkpoint& ck, int moe_layer, int expert);

}  // namespace ferry::moe
