#include "moe/model/decoder_ops.h"

#include <cmath>

#include <torch/types.h>
#include <torch/utils.h>

#include "core/error.h"

namespace ferry::moe {

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& w, double eps) {
  return x * torch::rsqrt(x.pow(2).mean(-1, true) + eps) * w;
}

at::Tensor activation(const std::string& hidden_act, const at::Tensor& x) {
  if (hidden_act == "silu" || hidden_act == "swish") return torch::silu(x);
  if (hidden_act == "gelu") return torch::gelu(x);
  if (hidden_act == "gelu_pytorch_tanh" || hidden_act == "gelu_new") return torch::gelu(x, "tanh");
  FERRY_THROW(InvalidArgument, "hidden_act '", hidden_act, "' is not implemented");
}

at::Tensor gated_mlp(const at::Tensor& x, const at::Tensor& w1, const at::Tensor& w3, const at::Tensor& w2,
                     const std::string& hidden_act) {
  return torch::matmul(activation(hidden_act, torch::matmul(x, w1.t())) * torch::matmul(x, w3.t()), w2.t());
}

Qkv project_qkv(const at::Tensor& a, const LayerWeights& lw, const MoeConfig& c) {
  const std::int64_t B = a.size(0), T = a.size(1), D = c.head_dim;
  auto proj = [](const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
    auto y = torch::matmul(x, w.t());
    return b.defined() ? y + b : y;
  };
  at::Tensor q = proj(a, lw.wq, lw.bq), k = proj(a, lw.wk, lw.bk), v = proj(a, lw.wv, lw.bv);
  if (c.qk_norm == "full") {  // OlmoeAttention: q_norm over heads*D, k_norm over kv*D
    q = rms_norm(q, lw.q_norm, c.rms_norm_eps);
    k = rms_norm(k, lw.k_norm, c.rms_norm_eps);
  }
  if (c.clip_qkv > 0) {
    q = q.clamp(-c.clip_qkv, c.clip_qkv);
    k = k.clamp(-c.clip_qkv, c.clip_qkv);
    v = v.clamp(-c.clip_qkv, c.clip_qkv);
  }
  q = q.view({B, T, c.num_heads, D});
  k = k.view({B, T, c.num_kv_heads, D});
  if (c.qk_norm == "head") {  // Qwen3MoeAttention: q_norm / k_norm over each head's D
    q = rms_norm(q, lw.q_norm, c.rms_norm_eps);
    k = rms_norm(k, lw.k_norm, c.rms_norm_eps);
  }
  return {q.transpose(1, 2), k.transpose(1, 2), v.view({B, T, c.num_kv_heads, D}).transpose(1, 2)};
}

at::Tensor project_out(const at::Tensor& o, const LayerWeights& lw) {
  auto y = torch::matmul(o, lw.wo.t());
  return lw.bo.defined() ? y + lw.bo : y;
}

std::pair<at::Tensor, at::Tensor> route(const at::Tensor& m, const at::Tensor& router, const MoeConfig& c) {
  auto probs = torch::softmax(torch::matmul(m, router.t()), -1);
  auto [topw, topi] = probs.topk(c.top_k, -1);
  if (c.norm_topk_prob) topw = topw / topw.sum(-1, true);
  return {topw, topi};
}

at::Tensor always_active_mlp(const at::Tensor& m, const LayerWeights& lw, const MoeConfig& c) {
  if (lw.dw1.defined()) return gated_mlp(m, lw.dw1, lw.dw3, lw.dw2, c.hidden_act);
  if (!lw.sw1.defined()) return {};
  auto s = gated_mlp(m, lw.sw1, lw.sw3, lw.sw2, c.hidden_act);
  return lw.sgate.defined() ? s * torch::sigmoid(torch::matmul(m, lw.sgate.t())) : s;
}

at::Tensor rope_inv_freq(const MoeConfig& c) {
  const std::int64_t D = c.head_dim;
  at::Tensor inv = 1.0 / torch::pow(c.rope_theta, torch::arange(0, D, 2, torch::kFloat64) / static_cast<double>(D));
  const RopeScaling& s = c.rope_scaling;
  if (s.type == "default") return inv;
  if (s.type == "linear") return inv / s.factor;
  FERRY_CHECK(s.type == "llama3", "rope_scaling type '", s.type, "' passed the config's checks");
  // Wavelengths longer than the original context / low_freq_factor are slowed by `factor`, those
  // shorter than ... / high_freq_factor kept, the ones between interpolated smoothly.
  const double old = s.original_max_position_embeddings;
  const double low_wavelen = old / s.low_freq_factor, high_wavelen = old / s.high_freq_factor;
  at::Tensor wavelen = 2 * M_PI / inv;
  at::Tensor scaled = torch::where(wavelen > low_wavelen, inv / s.factor, inv);
  at::Tensor smooth = (old / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
  at::Tensor smoothed = (1 - smooth) * scaled / s.factor + smooth * scaled;
  at::Tensor medium = wavelen.ge(high_wavelen).logical_and(wavelen.le(low_wavelen));
  return torch::where(medium, smoothed, scaled);
}

}  // namespace ferry::moe
