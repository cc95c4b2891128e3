#include "moe/model/mla.h"

#include <cmath>
#include <limits>
#include <vector>

#include <torch/types.h>
#include <torch/utils.h>

#include <ATen/Parallel.h>

#include "moe/model/decoder_ops.h"
#include "moe/quant/matmul.h"

namespace ferry::moe {

at::Tensor rope_pairs(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  std::vector<std::int64_t> pairs(x.sizes().begin(), x.sizes().end());
  pairs.back() /= 2;
  pairs.push_back(2);
  const at::Tensor p = x.reshape(pairs);
  const at::Tensor x0 = p.select(-1, 0), x1 = p.select(-1, 1);
  return torch::stack({x0 * cos - x1 * sin, x0 * sin + x1 * cos}, -1).flatten(-2);
}

namespace {

// x [B, heads, T, cols] times each head's part of w (rows_h rows of cols per head, head after
// head) transposed: [B, heads, T, rows_h]. A weight in blocks is computed on them, every head's
// product in one parallel region.
at::Tensor heads_project(const at::Tensor& x, const Weight& w, std::int64_t rows_h) {
  const std::int64_t B = x.size(0), nh = x.size(1), T = x.size(2), cols = x.size(3);
  if (w.type == quant::QuantType::kF32 || rows_h % static_cast<std::int64_t>(quant::matmul_row_unit(w.type)) != 0)
    return torch::matmul(x, w.to_float().view({nh, rows_h, cols}).transpose(1, 2));  // (heads not whole row groups)
  const at::Tensor xh = x.transpose(0, 1).reshape({nh, B * T, cols}).contiguous();
  const auto n = static_cast<std::size_t>(B * T), k = static_cast<std::size_t>(cols);
  const std::size_t act_bytes = quant::activation_row_bytes(w.type, k) * n;  // one head's
  std::vector<std::byte> act;  // every head's rows, head after head, as xh holds them
  quant::quantize_activations(w.type, xh.data_ptr<float>(), n * static_cast<std::size_t>(nh), k, act);
  at::Tensor y = torch::empty({nh, B * T, rows_h});
  const auto* data = w.values.data_ptr<std::uint8_t>();
  at::parallel_for(0, nh, 1, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t h = begin; h < end; ++h)  // y[b * rows_h + r - h * rows_h] for its rows r
      quant::matmul_rows(w.type, data, static_cast<std::size_t>(nh * rows_h), k, static_cast<std::size_t>(h * rows_h),
                         static_cast<std::size_t>((h + 1) * rows_h), act.data() + act_bytes * h, n,
                         y[h].data_ptr<float>() - h * rows_h, static_cast<std::size_t>(rows_h));
  });
  return y.view({nh, B, T, rows_h}).transpose(0, 1);
}

}  // namespace

MlaInputs mla_project(const at::Tensor& a, const LayerWeights& lw, const MoeConfig& c, const at::Tensor& cos,
                      const at::Tensor& sin) {
  const std::int64_t B = a.size(0), T = a.size(1), nh = c.num_heads, D = c.head_dim, R = c.rotary_dims();
  const std::int64_t L = c.kv_lora_rank;
  at::Tensor q = lw.wq_a.defined() ? project(rms_norm(project(a, lw.wq_a), lw.q_a_norm, c.rms_norm_eps), lw.wq_b)
                                   : project(a, lw.wq);
  q = q.view({B, T, nh, D}).transpose(1, 2);
  const at::Tensor kv = project(a, lw.wkv_a);  // [B, T, L + R]
  MlaInputs in;
  in.q_nope = q.slice(-1, 0, D - R);
  in.q_pe = rope_pairs(q.slice(-1, D - R, D), cos, sin);
  in.latent = torch::cat({rms_norm(kv.slice(-1, 0, L), lw.kv_a_norm, c.rms_norm_eps),
                          rope_pairs(kv.slice(-1, L, L + R), cos, sin)},
                         -1)
                  .unsqueeze(1);
  return in;
}

double mla_scale(const MoeConfig& c) { return yarn_softmax_factor(c) / std::sqrt(static_cast<double>(c.head_dim)); }

at::Tensor mla_attend(const MlaInputs& in, const at::Tensor& latents, const at::Tensor& hidden, const LayerWeights& lw,
                      const MoeConfig& c) {
  const std::int64_t B = in.q_nope.size(0), nh = in.q_nope.size(1), T = in.q_nope.size(2), S = latents.size(2);
  const std::int64_t L = c.kv_lora_rank;
  // Each head's query in latent space, W_kb,h^T q_nope,h, beside its rotary part: then every head
  // of every query is one row of a single product with the latents (multi-query attention).
  const at::Tensor q = torch::cat({heads_project(in.q_nope, lw.wk_b, L), in.q_pe}, -1).reshape({B, 1, nh * T, -1});
  at::Tensor scores = torch::matmul(q, latents.transpose(2, 3)).view({B, nh, T, S}) * mla_scale(c);
  if (hidden.defined()) scores = scores.masked_fill(hidden, -std::numeric_limits<float>::infinity());
  const at::Tensor probs = torch::softmax(scores, -1).view({B, 1, nh * T, S});
  const at::Tensor mixed = torch::matmul(probs, latents.slice(-1, 0, L)).view({B, nh, T, L});
  return heads_project(mixed, lw.wv_b, c.v_head_dim).transpose(1, 2).reshape({B, T, nh * c.v_head_dim});
}

std::pair<at::Tensor, at::Tensor> mla_expand(const at::Tensor& latents, const LayerWeights& lw, const MoeConfig& c) {
  const std::int64_t B = latents.size(0), S = latents.size(2), L = c.kv_lora_rank, R = c.rotary_dims();
  const at::Tensor lat = latents.slice(-1, 0, L);                                 // [B, 1, S, L]
  const std::int64_t nh = c.num_heads;
  const at::Tensor k_nope = torch::matmul(lat, lw.wk_b.to_float().view({nh, L, -1}));  // [B, heads, S, nope]
  const at::Tensor k_pe = latents.slice(-1, L, L + R).expand({B, nh, S, R});
  return {torch::cat({k_nope, k_pe}, -1), torch::matmul(lat, lw.wv_b.to_float().view({nh, -1, L}).transpose(1, 2))};
}

}  // namespace ferry::moe
