// The decoder's arithmetic as Hugging Face's Mixtral and Qwen2-MoE modeling code defines it,
// shared by the offloading engine and the plain reference forward, so that a config key is
// honoured in one place: RMSNorm, the experts' gated MLP with the config's hidden_act, and the
// rotary frequencies with the config's rope_scaling.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>

#include "moe/model/config.h"

namespace ferry::moe {

// x * rsqrt(mean(x^2) + eps) * w over the last dimension.
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& w, double eps);
// HF's ACT2FN[hidden_act]: silu (swish), gelu (erf), gelu_pytorch_tanh and gelu_new (tanh form).
at::Tensor activation(const std::string& hidden_act, const at::Tensor& x);
// down(act(gate(x)) * up(x)): w1 = gate [I, H], w3 = up [I, H], w2 = down [H, I].
at::Tensor gated_mlp(const at::Tensor& x, const at::Tensor& w1, const at::Tensor& w3, const at::Tensor& w2,
                     const std::string& hidden_act);
// The rotary inverse frequencies, float64 [head_dim / 2]: 1 / theta^(2i / D), then rope_scaling
// ("linear": divided by factor; "llama3": HF's _compute_llama3_parameters).
at::Tensor rope_inv_freq(const MoeConfig& c);

}  // namespace ferry::moe
