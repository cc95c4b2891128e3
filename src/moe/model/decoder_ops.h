// The decoder's arithmetic as Hugging Face's modeling code of each family defines it, shared by
// the offloading engine and the plain reference forward, so that a config key is honoured in one
// place: RMSNorm, the q/k/v projections (biases, q/k norms, clipping), the router, the experts'
// gated MLP with the config's hidden_act, and the rotary frequencies with the config's rope_scaling.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <utility>
#include <vector>

#include "moe/model/config.h"
#include "moe/model/weights.h"

namespace ferry::moe {

// x * rsqrt(mean(x^2) + eps) * w over the last dimension.
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& w, double eps);
// HF's ACT2FN[hidden_act]: silu (swish), gelu (erf), gelu_pytorch_tanh and gelu_new (tanh form).
at::Tensor activation(const std::string& hidden_act, const at::Tensor& x);
// x · wᵀ for a weight w [out, in] and x [..., in]. A weight in a block format is computed on its
// blocks by ferry's kernels (moe/quant/matmul.h) at every batch size. A float32 weight at fewer
// than 8 rows of x is a matrix-vector product, which streams w once: the same kernels over the
// rows of w split across the intra-op threads run it near the memory bandwidth, 3x libtorch's
// GEMV on one thread (bench/RESULTS.md, "MoE kernels"); more rows go to libtorch's GEMM.
at::Tensor project(const at::Tensor& x, const Weight& w);
// project() of one input by several weights (q, k and v; gate and up): on the block kernels, the
// activations are converted once and all the products share one parallel region.
std::vector<at::Tensor> project_many(const at::Tensor& x, const std::vector<const Weight*>& ws);

// A matrix [rows, cols] in `type` at `data`, in the kernels' layout (moe/quant/row_groups.h).
struct BlockMatrix {
  quant::QuantType type;
  const std::byte* data;
  std::int64_t rows;
};
// One product of a parallel region: y [batch, w.rows] (row stride w.rows) = x · Wᵀ for `batch`
// rows x already in w's activation format (quant::quantize_activations).
struct BlockProduct {
  BlockMatrix w;
  const std::byte* activations;
  std::int64_t batch;
  float* y;
};
// Every product of `ps` (rows of `cols` weights each) in one parallel region: its tasks are whole
// row groups (quant::matmul_row_unit) of every matrix in turn, ~64 KB of weights each, split evenly
// across the intra-op threads.
void run_block_products(std::int64_t cols, const std::vector<BlockProduct>& ps);
// x [n, cols] (float32, contiguous) · Wᵀ for each W of `ws`, the activations converted once and
// the products in one region (run_block_products): one [n, rows] each.
std::vector<at::Tensor> project_blocks(const at::Tensor& x, std::int64_t cols, const std::vector<BlockMatrix>& ws);
at::Tensor project_blocks(const at::Tensor& x, quant::QuantType type, const std::byte* w, std::int64_t rows,
                          std::int64_t cols);

// An expert's biases (config.expert_bias): gate [I], up [I], down [H]; undefined when it has none.
struct ExpertBias {
  at::Tensor gate, up, down;
};
// Expert e's rows of a layer's expert biases (LayerWeights::expert_b*); empty without them.
ExpertBias expert_bias(const LayerWeights& lw, int expert);
// The gated unit on the gate and up projections, `b`'s gate and up biases added when defined:
// act(gate) * up with hidden_act, or gpt-oss's clamped SwiGLU when swiglu_limit > 0
// (MoeConfig::swiglu_limit).
at::Tensor glu(const MoeConfig& c, const at::Tensor& gate, const at::Tensor& up, const ExpertBias& b = {});
// The down projection's output `y` plus `b`'s down bias when defined.
at::Tensor with_down_bias(const at::Tensor& y, const ExpertBias& b);
// down(glu(gate(x), up(x))): w1 = gate [I, H], w3 = up [I, H], w2 = down [H, I], each plus its bias
// in `b` when defined.
at::Tensor gated_mlp(const at::Tensor& x, const Weight& w1, const Weight& w3, const Weight& w2, const MoeConfig& c,
                     const ExpertBias& b = {});
// q [B, heads, T, D], k and v [B, kv, T, D] of the normed input a [B, T, H], before the rotary
// embedding: biases (qkv_bias), OLMoE's RMSNorm of the whole q/k projection and clip_qkv, or
// Qwen3-MoE's RMSNorm of each q/k head.
struct Qkv {
  at::Tensor q, k, v;
};
Qkv project_qkv(const at::Tensor& a, const LayerWeights& lw, const MoeConfig& c);
// The attention output o [B, T, heads*D] projected back: o wo^T (+ bo).
at::Tensor project_out(const at::Tensor& o, const LayerWeights& lw);
// The router of an MoE layer on the normed tokens m [N, H]: its logits (plus router_logit_bias), the scores (softmax over the experts,
// or each logit's sigmoid: scoring_func), the top_k chosen by the scores plus the router bias when
// the layer has one, within the topk_group best of n_group groups when there are groups; (weights,
// indices), the weights the unbiased scores, renormalised to sum 1 when norm_topk_prob, times
// routed_scaling_factor.
std::pair<at::Tensor, at::Tensor> route(const at::Tensor& m, const LayerWeights& lw, const MoeConfig& c);
// The always-active part of a layer's MLP on m [N, H]: a dense layer's MLP, or an MoE layer's
// shared expert (times its sigmoid gate), or undefined when the layer has neither.
at::Tensor always_active_mlp(const at::Tensor& m, const LayerWeights& lw, const MoeConfig& c);
// YaRN (rope_scaling yarn, as DeepSeek's modeling code applies it): the factor the rotary cos and
// sin are multiplied by, mscale(factor, mscale) / mscale(factor, mscale_all_dim), and the one the
// softmax scale is, mscale(factor, mscale_all_dim)^2 (with mscale(s, m) = 0.1 m ln s + 1); both 1
// without yarn.
double rope_attention_factor(const MoeConfig& c);
double yarn_softmax_factor(const MoeConfig& c);
// The rotary inverse frequencies, float64 [rotary_dims() / 2]: 1 / theta^(2i / D), then rope_scaling
// ("linear": divided by factor; "llama3": HF's _compute_llama3_parameters).
at::Tensor rope_inv_freq(const MoeConfig& c);

}  // namespace ferry::moe
