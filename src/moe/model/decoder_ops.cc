#include "moe/model/decoder_ops.h"

#include <cmath>

#include <torch/types.h>
#include <torch/utils.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <limits>
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

void run_block_products(std::int64_t cols, const std::vector<BlockProduct>& ps) {
  // Tasks: whole row groups (matmul_row_unit) of every matrix in turn, so that the matrices share
  // one parallel region; each ~64 KB of weights, enough to outweigh its scheduling.
  std::vector<std::int64_t> first_unit;  // the matrices' first task numbers
  std::int64_t units = 0, unit_bytes = 0;
  for (const auto& p : ps) {
    first_unit.push_back(units);
    const auto unit = static_cast<std::int64_t>(quant::matmul_row_unit(p.w.type));
    units += (p.w.rows + unit - 1) / unit;
    unit_bytes = std::max<std::int64_t>(
        unit_bytes, unit * static_cast<std::int64_t>(quant::quant_row_bytes(p.w.type, static_cast<std::size_t>(cols))));
  }
  first_unit.push_back(units);
  const auto grain = std::max<std::int64_t>(1, 65536 / std::max<std::int64_t>(1, unit_bytes));
  at::parallel_for(0, units, grain, [&](std::int64_t begin, std::int64_t end) {
    for (std::size_t i = 0; i < ps.size(); ++i) {
      const std::int64_t b = std::max(begin, first_unit[i]), e = std::min(end, first_unit[i + 1]);
      if (b >= e) continue;
      const BlockMatrix& w = ps[i].w;
      const auto unit = static_cast<std::int64_t>(quant::matmul_row_unit(w.type));
      quant::matmul_rows(w.type, w.data, static_cast<std::size_t>(w.rows), static_cast<std::size_t>(cols),
                         static_cast<std::size_t>((b - first_unit[i]) * unit),
                         static_cast<std::size_t>(std::min(w.rows, (e - first_unit[i]) * unit)), ps[i].activations,
                         static_cast<std::size_t>(ps[i].batch), ps[i].y, static_cast<std::size_t>(w.rows));
    }
  });
}

std::vector<at::Tensor> project_blocks(const at::Tensor& x, std::int64_t cols, const std::vector<BlockMatrix>& ws) {
  const auto n = static_cast<std::size_t>(x.size(0));
  // The activations in each format the matrices need, converted once.
  thread_local std::vector<std::byte> act[3];
  const std::byte* acts[3] = {};
  for (const auto& w : ws) {
    const auto f = static_cast<int>(quant::activation_format(w.type));
    if (acts[f] != nullptr) continue;
    quant::quantize_activations(w.type, x.data_ptr<float>(), n, static_cast<std::size_t>(cols), act[f]);
    acts[f] = act[f].data();
  }
  std::vector<at::Tensor> ys;
  std::vector<BlockProduct> ps;
  for (const auto& w : ws) {
    ys.push_back(torch::empty({x.size(0), w.rows}));
    ps.push_back({w, acts[static_cast<int>(quant::activation_format(w.type))], x.size(0), ys.back().data_ptr<float>()});
  }
  run_block_products(cols, ps);
  return ys;
}

at::Tensor project_blocks(const at::Tensor& x, quant::QuantType type, const std::byte* w, std::int64_t rows,
                          std::int64_t cols) {
  return project_blocks(x, cols, {BlockMatrix{type, w, rows}})[0];
}

namespace {

// Whether x · wᵀ goes to the block kernels (project's rule), and w as such a matrix.
bool on_blocks(const at::Tensor& x, const Weight& w) {
  const std::int64_t rows = w.cols > 0 ? x.numel() / w.cols : 0;
  const bool cpu_no_grad = x.scalar_type() == at::kFloat && !x.requires_grad() && x.device().is_cpu();
  if (w.type != quant::QuantType::kF32) {
    FERRY_REQUIRE(cpu_no_grad, "a weight in ", quant::quant_name(w.type),
                  " blocks is computed on CPU float32 activations without gradients");
    return true;
  }
  const at::Tensor& t = w.values;
  return rows > 0 && rows < 8 && t.dim() == 2 && t.scalar_type() == at::kFloat && t.is_contiguous() &&
         !t.requires_grad() && t.device().is_cpu() && cpu_no_grad;
}

BlockMatrix block_matrix(const Weight& w) {
  return {w.type, static_cast<const std::byte*>(w.values.data_ptr()), w.rows};
}

}  // namespace

std::vector<at::Tensor> project_many(const at::Tensor& x, const std::vector<const Weight*>& ws) {
  std::vector<at::Tensor> ys;
  bool blocks = true;
  for (const Weight* w : ws) blocks = blocks && w->cols == ws[0]->cols && on_blocks(x, *w);
  if (!blocks) {
    for (const Weight* w : ws) ys.push_back(project(x, *w));
    return ys;
  }
  const std::int64_t in = ws[0]->cols;
  std::vector<BlockMatrix> ms;
  for (const Weight* w : ws) ms.push_back(block_matrix(*w));
  ys = project_blocks(x.contiguous().view({x.numel() / in, in}), in, ms);
  for (std::size_t i = 0; i < ws.size(); ++i) {
    std::vector<std::int64_t> shape(x.sizes().begin(), x.sizes().end());
    shape.back() = ws[i]->rows;
    ys[i] = ys[i].view(shape);
  }
  return ys;
}

at::Tensor project(const at::Tensor& x, const Weight& w) {
  if (!on_blocks(x, w)) return torch::matmul(x, w.values.t());
  return project_many(x, {&w})[0];
}

ExpertBias expert_bias(const LayerWeights& lw, int expert) {
  if (!lw.expert_b1.defined()) return {};
  return {lw.expert_b1[expert], lw.expert_b3[expert], lw.expert_b2[expert]};
}

at::Tensor glu(const MoeConfig& c, const at::Tensor& gate_in, const at::Tensor& up_in, const ExpertBias& b) {
  const at::Tensor gate = b.gate.defined() ? gate_in + b.gate : gate_in;
  const at::Tensor up = b.up.defined() ? up_in + b.up : up_in;
  if (c.swiglu_limit <= 0) return activation(c.hidden_act, gate) * up;
  // GptOssExperts._apply_gate
  const at::Tensor g = gate.clamp_max(c.swiglu_limit);
  return (up.clamp(-c.swiglu_limit, c.swiglu_limit) + 1) * g * torch::sigmoid(g * c.swiglu_alpha);
}

at::Tensor with_down_bias(const at::Tensor& y, const ExpertBias& b) { return b.down.defined() ? y + b.down : y; }

at::Tensor gated_mlp(const at::Tensor& x, const Weight& w1, const Weight& w3, const Weight& w2, const MoeConfig& c,
                     const ExpertBias& b) {
  auto gu = project_many(x, {&w1, &w3});
  return with_down_bias(project(glu(c, gu[0], gu[1], b), w2), b);
}

Qkv project_qkv(const at::Tensor& a, const LayerWeights& lw, const MoeConfig& c) {
  const std::int64_t B = a.size(0), T = a.size(1), D = c.head_dim;
  auto qkv = project_many(a, {&lw.wq, &lw.wk, &lw.wv});
  auto bias = [](const at::Tensor& y, const at::Tensor& b) { return b.defined() ? y + b : y; };
  at::Tensor q = bias(qkv[0], lw.bq), k = bias(qkv[1], lw.bk), v = bias(qkv[2], lw.bv);
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

namespace {

// The chosen experts' weights: renormalised to sum 1 (norm_topk_prob), then scaled.
at::Tensor finish_weights(at::Tensor topw, const MoeConfig& c) {
  if (c.norm_topk_prob) topw = topw / topw.sum(-1, true);
  if (c.routed_scaling_factor != 1.0) topw = topw * c.routed_scaling_factor;
  return topw;
}

}  // namespace

std::pair<at::Tensor, at::Tensor> route(const at::Tensor& m, const LayerWeights& lw, const MoeConfig& c) {
  const at::Tensor logits = lw.router_logit_bias.defined() ? project(m, lw.router) + lw.router_logit_bias : project(m, lw.router);
  const at::Tensor scores = c.scoring_func == "sigmoid" ? torch::sigmoid(logits) : torch::softmax(logits, -1);
  if (!lw.router_bias.defined() && c.n_group == 1) {  // the scores choose and weigh
    auto [topw, topi] = scores.topk(c.top_k, -1);
    return {finish_weights(topw, c), topi};
  }
  // DeepSeek-V3's noaux_tc (and GLM-4.5's): the bias steers the choice only; with groups, a token
  // chooses among the topk_group groups whose two best biased scores sum highest (DeepSeek-V2's
  // group_limited_greedy: whose best score is highest).
  at::Tensor choice = lw.router_bias.defined() ? scores + lw.router_bias : scores;
  if (c.n_group > 1) {
    const std::int64_t N = choice.size(0);
    auto groups = choice.view({N, c.n_group, c.num_experts / c.n_group});
    auto group_scores = c.group_by_max ? std::get<0>(groups.max(-1)) : std::get<0>(groups.topk(2, -1)).sum(-1);
    auto keep = torch::zeros({N, c.n_group}, torch::kBool).scatter_(1, std::get<1>(group_scores.topk(c.topk_group, -1)), true);
    choice = groups.masked_fill(keep.logical_not().unsqueeze(-1), -std::numeric_limits<float>::infinity()).view({N, -1});
  }
  auto topi = std::get<1>(choice.topk(c.top_k, -1));
  return {finish_weights(scores.gather(-1, topi), c), topi};
}

at::Tensor always_active_mlp(const at::Tensor& m, const LayerWeights& lw, const MoeConfig& c) {
  if (lw.dw1.defined()) return gated_mlp(m, lw.dw1, lw.dw3, lw.dw2, c);
  if (!lw.sw1.defined()) return {};
  auto s = gated_mlp(m, lw.sw1, lw.sw3, lw.sw2, c);
  return lw.sgate.defined() ? s * torch::sigmoid(project(m, lw.sgate)) : s;
}

namespace {

// yarn_get_mscale of DeepSeek's modeling code.
double yarn_mscale(double factor, double mscale) { return factor <= 1 ? 1.0 : 0.1 * mscale * std::log(factor) + 1.0; }

}  // namespace

double rope_attention_factor(const MoeConfig& c) {
  const RopeScaling& s = c.rope_scaling;
  return s.type == "yarn" ? yarn_mscale(s.factor, s.mscale) / yarn_mscale(s.factor, s.mscale_all_dim) : 1.0;
}

double yarn_softmax_factor(const MoeConfig& c) {
  const RopeScaling& s = c.rope_scaling;
  if (s.type != "yarn" || s.mscale_all_dim == 0) return 1.0;
  const double m = yarn_mscale(s.factor, s.mscale_all_dim);
  return m * m;
}

at::Tensor rope_inv_freq(const MoeConfig& c) {
  const std::int64_t D = c.rotary_dims();
  at::Tensor inv = 1.0 / torch::pow(c.rope_theta, torch::arange(0, D, 2, torch::kFloat64) / static_cast<double>(D));
  const RopeScaling& s = c.rope_scaling;
  if (s.type == "default") return inv;
  if (s.type == "linear") return inv / s.factor;
  if (s.type == "yarn") {
    // DeepSeek's yarn_find_correction_range and linear ramp: the dims that turn fewer than
    // beta_slow times over the original context are interpolated (divided by factor), those
    // turning more than beta_fast times kept, a linear blend between.
    auto dim_of = [&](double turns) {
      return D * std::log(s.original_max_position_embeddings / (turns * 2 * M_PI)) / (2 * std::log(c.rope_theta));
    };
    // HF's truncate (default true; gpt-oss: false) rounds the range out to whole dims.
    const double fast = dim_of(s.beta_fast), slow = dim_of(s.beta_slow);
    const double low = std::max(s.truncate ? std::floor(fast) : fast, 0.0);
    double high = std::min(s.truncate ? std::ceil(slow) : slow, static_cast<double>(D - 1));
    if (high == low) high += 0.001;
    const at::Tensor ramp = ((torch::arange(0, D / 2, torch::kFloat64) - low) / (high - low)).clamp(0, 1);
    return inv / s.factor * ramp + inv * (1 - ramp);
  }
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
