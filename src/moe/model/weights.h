// Non-expert weights (always resident) and per-expert weights as float32 libtorch tensors.
// Internal to ferry_moe: includes libtorch types.
#pragma once

#include <vector>

#include <torch/types.h>

#include "moe/model/checkpoint.h"

namespace ferry::moe {

struct LayerWeights {
  torch::Tensor attn_norm, ffn_norm;  // [H]
  torch::Tensor wq, wk, wv, wo;       // [heads*D, H], [kv*D, H], [kv*D, H], [H, heads*D]
  torch::Tensor bq, bk, bv, bo;       // optional biases (undefined when absent)
  torch::Tensor q_norm, k_norm;       // q/k RMSNorm weights: [D] per head, or [heads*D] / [kv*D] whole
  torch::Tensor router;               // [E, H] (undefined in a dense layer)
  torch::Tensor sw1, sw3, sw2;        // shared expert (undefined when the model has none)
  torch::Tensor sgate;                // [1, H] shared-expert gate (optional)
  torch::Tensor dw1, dw3, dw2;        // a dense layer's MLP (undefined in an MoE layer)
};

struct DenseWeights {
  MoeConfig config;
  torch::Tensor embed;       // [V, H]
  torch::Tensor final_norm;  // [H]
  torch::Tensor lm_head;     // [V, H]
  std::vector<LayerWeights> layers;
};

struct ExpertWeights {
  torch::Tensor w1, w3, w2;  // gate [I, H], up [I, H], down [H, I]
};

// Reads `name` (checking the shape) as a float32 tensor.
torch::Tensor load_tensor_f32(const Checkpoint& ck, const std::string& name, const std::vector<std::int64_t>& shape);
// Everything but the routed experts.
DenseWeights load_dense_weights(const Checkpoint& ck);
// Routed expert `expert` of MoE layer `moe_layer` (MoeConfig::decoder_layer maps it to its block).
ExpertWeights load_expert_weights(const Checkpoint& ck, int moe_layer, int expert);

}  // namespace ferry::moe
