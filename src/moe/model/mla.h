// Multi-head latent attention (DeepSeek-V2, arXiv 2405.04434, section 2.1; DeepSeek-V3 and Kimi-K2):
// each token's keys and values for every head come from one latent c = RMSNorm(W_dkv x) of
// kv_lora_rank dims, k_h = [W_kb,h c, k_pe] and v_h = W_vb,h c, where k_pe is one rotary key shared
// by the heads. Since q_h . k_h = (W_kb,h^T q_nope,h) . c + q_pe,h . k_pe, attention can run on the
// latents themselves (the "absorbed" form): the KV cache holds kv_lora_rank + qk_rope_head_dim
// floats per token and layer instead of heads x (2 x head) floats, and the value's projection
// W_vb,h is applied once to each head's weighted latent. ferry's engine attends in that form (as
// llama.cpp and vLLM do); its reference forward expands the keys and values per head as HF's
// modeling_deepseek.py does, so the two check each other. Internal to ferry_moe: libtorch types.
#pragma once

#include <ATen/core/Tensor.h>

#include <utility>

#include "moe/model/config.h"
#include "moe/model/weights.h"

namespace ferry::moe {

// The rotary embedding in interleaved pairs (dims 2i, 2i+1 turned by angle i: llama.cpp's normal
// rope, and what HF's DeepSeek computes after its de-interleaving view): x [..., T, R] with cos and
// sin [T, R / 2].
at::Tensor rope_pairs(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);

// One forward's queries and latents, from the normed input a [B, T, H] at positions whose rotary
// cos and sin are [T, R / 2].
struct MlaInputs {
  at::Tensor q_nope;  // [B, heads, T, nope]
  at::Tensor q_pe;    // [B, heads, T, R], rotated
  at::Tensor latent;  // [B, 1, T, kv_lora + R]: the normed latent, then the rotated shared key
};
MlaInputs mla_project(const at::Tensor& a, const LayerWeights& lw, const MoeConfig& c, const at::Tensor& cos,
                      const at::Tensor& sin);

// The softmax scale of q . k: 1 / sqrt(head_dim), head_dim = nope + R, times YaRN's
// (yarn_softmax_factor).
double mla_scale(const MoeConfig& c);

// The absorbed form: the queries against every cached latent `latents` [B or 1, 1, S, kv_lora + R]
// (the positions `hidden` [T, S] marks true masked, when defined). Returns the heads' values
// [B, T, heads * v], for o_proj.
at::Tensor mla_attend(const MlaInputs& in, const at::Tensor& latents, const at::Tensor& hidden, const LayerWeights& lw,
                      const MoeConfig& c);

// The expanded form of latents [B, 1, S, kv_lora + R]: keys [B, heads, S, nope + R] and values
// [B, heads, S, v] per head, as HF's DeepseekV2Attention computes them.
std::pair<at::Tensor, at::Tensor> mla_expand(const at::Tensor& latents, const LayerWeights& lw, const MoeConfig& c);

}  // namespace ferry::moe
