#include "moe/model/decoder_ops.h"

#include <cmath>

#include <torch/types.h>
#include <torch/utils.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "moe/quant/matmul.h"

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

at::Tensor project_blocks(const at::Tensor& x, quant::QuantType type, const std::byte* w, std::int64_t rows,
                          std::int64_t cols) {
  const auto n = static_cast<std::size_t>(x.size(0));
  thread_local std::vector<std::byte> act;
  quant::quantize_activations(type, x.data_ptr<float>(), n, static_cast<std::size_t>(cols), act);
  auto y = torch::empty({x.size(0), rows});
  float* out = y.data_ptr<float>();
  // Tasks of whole row groups (matmul_row_unit), each ~64 KB of weights, enough to outweigh its
  // scheduling.
  const auto unit = static_cast<std::int64_t>(quant::matmul_row_unit(type));
  const auto row_bytes = static_cast<std::int64_t>(quant::quant_row_bytes(type, static_cast<std::size_t>(cols)));
  const std::int64_t units = (rows + unit - 1) / unit;
  const auto grain = std::max<std::int64_t>(1, 65536 / std::max<std::int64_t>(1, unit * row_bytes));
  const std::byte* a = act.data();
  at::parallel_for(0, units, grain, [&](std::int64_t begin, std::int64_t end) {
    quant::matmul_rows(type, w, static_cast<std::size_t>(rows), static_cast<std::size_t>(cols),
                       static_cast<std::size_t>(begin * unit), static_cast<std::size_t>(std::min(rows, end * unit)), a, n,
                       out, static_cast<std::size_t>(rows));
  });
  return y;
}

at::Tensor project(const at::Tensor& x, const Weight& w) {
  const std::int64_t in = w.cols, out = w.rows;
  const std::int64_t rows = in > 0 ? x.numel() / in : 0;
  const bool cpu_no_grad = x.scalar_type() == at::kFloat && !x.requires_grad() && x.device().is_cpu();
  if (w.type == quant::QuantType::kF32) {
    const at::Tensor& t = w.values;
    const bool streaming = rows > 0 && rows < 8 && t.dim() == 2 && t.scalar_type() == at::kFloat && t.is_contiguous() &&
                           !t.requires_grad() && t.device().is_cpu() && cpu_no_grad;
    if (!streaming) return torch::matmul(x, t.t());
  } else {
    FERRY_REQUIRE(cpu_no_grad, "a weight in ", quant::quant_name(w.type),
                  " blocks is computed on CPU float32 activations without gradients");
  }
  std::vector<std::int64_t> shape(x.sizes().begin(), x.sizes().end());
  shape.back() = out;
  const auto* blocks = static_cast<const std::byte*>(w.values.data_ptr());
  return project_blocks(x.contiguous().view({rows, in}), w.type, blocks, out, in).view(shape);
}

at::Tensor gated_mlp(const at::Tensor& x, const Weight& w1, const Weight& w3, const Weight& w2,
                     const std::string& hidden_act) {
  return project(activation(hidden_act, project(x, w1)) * project(x, w3), w2);
}

Qkv project_qkv(const at::Tensor& a, const LayerWeights& lw, const MoeConfig& c) {
  const std::int64_t B = a.size(0), T = a.size(1), D = c.head_dim;
  auto proj = [](const at::Tensor& x, const Weight& w, const at::Tensor& b) {
    auto y = project(x, w);
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
  auto y = project(o, lw.wo);
  return lw.bo.defined() ? y + lw.bo : y;
}

std::pair<at::Tensor, at::Tensor> route(const at::Tensor& m, const at::Tensor& router, const MoeConfig& c) {
  auto probs = torch::softmax(project(m, router), -1);
  auto [topw, topi] = probs.topk(c.top_k, -1);
  if (c.norm_topk_prob) topw = topw / topw.sum(-1, true);
  return {topw, topi};
}

at::Tensor always_active_mlp(const at::Tensor& m, const LayerWeights& lw, const MoeConfig& c) {
  if (lw.dw1.defined()) return gated_mlp(m, lw.dw1, lw.dw3, lw.dw2, c.hidden_act);
  if (!lw.sw1.defined()) return {};
  auto s = gated_mlp(m, lw.sw1, lw.sw3, lw.sw2, c.hidden_act);
  return lw.sgate.defined() ? s * torch::sigmoid(project(m, lw.sgate)) : s;
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
