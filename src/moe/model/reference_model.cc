#include "moe/model/reference_model.h"

#include <cmath>

#include <torch/types.h>
#include <torch/utils.h>

#include "core/error.h"
#include "moe/model/decoder_ops.h"
#include "moe/model/mla.h"
#include "moe/model/weights.h"

namespace ferry::moe {

struct ReferenceModel::Impl {
  DenseWeights w;
  std::vector<std::vector<ExpertWeights>> experts;  // [MoE layer][expert]
  std::vector<torch::Tensor> k_cache, v_cache;     // per layer [B, kv, T, D], grown by cat
  std::int64_t pos = 0;
};

ReferenceModel::ReferenceModel() : impl_(std::make_unique<Impl>()) {}
ReferenceModel::~ReferenceModel() = default;

std::unique_ptr<ReferenceModel> ReferenceModel::load(const Checkpoint& ck) {
  std::unique_ptr<ReferenceModel> m(new ReferenceModel());
  m->impl_->w = load_dense_weights(ck);
  const MoeConfig& c = ck.config();
  m->impl_->experts.resize(c.num_moe_layers());
  for (int l = 0; l < c.num_moe_layers(); ++l)
    for (int e = 0; e < c.num_experts; ++e) m->impl_->experts[l].push_back(load_expert_weights(ck, l, e));
  m->reset();
  return m;
}

void ReferenceModel::reset() {
  impl_->k_cache.assign(impl_->w.config.num_layers, torch::Tensor());
  impl_->v_cache.assign(impl_->w.config.num_layers, torch::Tensor());
  impl_->pos = 0;
}

const MoeConfig& ReferenceModel::config() const { return impl_->w.config; }

namespace {

// Rotary embedding, "rotate half" layout of Hugging Face Mixtral, over the first 2 x inv_freq
// dims of each head (the others pass): x [B, h, T, D]; cos and sin times `scale` (YaRN's
// attention factor).
torch::Tensor rope(const torch::Tensor& x, std::int64_t start, const torch::Tensor& inv_freq, double scale) {
  if (x.size(3) > 2 * inv_freq.size(0)) {
    const std::int64_t R = 2 * inv_freq.size(0);
    return torch::cat({rope(x.slice(-1, 0, R), start, inv_freq, scale), x.slice(-1, R, x.size(3))}, -1);
  }
  const std::int64_t T = x.size(2), D = x.size(3);
  auto t = torch::arange(start, start + T, torch::kFloat64);
  auto freqs = torch::outer(t, inv_freq);
  auto emb = torch::cat({freqs, freqs}, -1);
  auto cos = (emb.cos() * scale).to(torch::kFloat32), sin = (emb.sin() * scale).to(torch::kFloat32);
  auto x1 = x.slice(-1, 0, D / 2), x2 = x.slice(-1, D / 2, D);
  auto rotated = torch::cat({-x2, x1}, -1);
  return x * cos + rotated * sin;
}

}  // namespace

std::vector<float> ReferenceModel::forward(const TokenBatch& tokens, bool all_positions) {
  torch::NoGradGuard no_grad;
  const MoeConfig& c = impl_->w.config;
  FERRY_REQUIRE(!tokens.empty() && !tokens[0].empty(), "forward needs at least one token");
  const std::int64_t B = static_cast<std::int64_t>(tokens.size()), T = static_cast<std::int64_t>(tokens[0].size());
  std::vector<std::int64_t> flat;
  for (const auto& row : tokens) {
    FERRY_REQUIRE(static_cast<std::int64_t>(row.size()) == T, "every row of a batch must have the same length");
    for (auto id : row) {
      FERRY_REQUIRE(id >= 0 && id < c.vocab_size, "token id ", id, " outside the vocabulary of ", c.vocab_size);
      flat.push_back(id);
    }
  }
  FERRY_REQUIRE(impl_->pos + T <= c.max_position_embeddings, "sequence longer than max_position_embeddings (",
                c.max_position_embeddings, ")");
  const std::int64_t H = c.hidden_size, D = c.head_dim, nh = c.num_heads, kvh = c.num_kv_heads;
  auto ids = torch::tensor(flat, torch::kInt64);
  auto x = impl_->w.embed.select_rows(ids).view({B, T, H});
  const auto inv_freq = rope_inv_freq(c);
  for (int l = 0; l < c.num_layers; ++l) {
    const LayerWeights& lw = impl_->w.layers[l];
    auto a = rms_norm(x, lw.attn_norm, c.rms_norm_eps);
    torch::Tensor q, k, v;
    if (c.mla()) {  // the expanded form: keys and values per head (moe/model/mla.h)
      auto angles = torch::outer(torch::arange(impl_->pos, impl_->pos + T, torch::kFloat64), inv_freq);
      const double m = rope_attention_factor(c);
      const MlaInputs in = mla_project(a, lw, c, (angles.cos() * m).to(torch::kFloat32), (angles.sin() * m).to(torch::kFloat32));
      std::tie(k, v) = mla_expand(in.latent, lw, c);
      q = torch::cat({in.q_nope, in.q_pe}, -1);
    } else {
      auto qkv = project_qkv(a, lw, c);
      q = rope(qkv.q, impl_->pos, inv_freq, rope_attention_factor(c));
      k = rope(qkv.k, impl_->pos, inv_freq, rope_attention_factor(c));
      v = qkv.v;
    }
    if (impl_->k_cache[l].defined()) {
      k = torch::cat({impl_->k_cache[l], k}, 2);
      v = torch::cat({impl_->v_cache[l], v}, 2);
    }
    impl_->k_cache[l] = k;
    impl_->v_cache[l] = v;
    auto kk = k.repeat_interleave(nh / kvh, 1), vv = v.repeat_interleave(nh / kvh, 1);
    auto scores = torch::matmul(q, kk.transpose(2, 3)) * (c.mla() ? mla_scale(c) : 1 / std::sqrt(static_cast<double>(D)));
    const std::int64_t S = kk.size(2);
    // query i (absolute position pos+i) may see keys 0..pos+i; in a windowed layer only the last W
    auto qpos = torch::arange(impl_->pos, impl_->pos + T, torch::kInt64).view({T, 1});
    auto kpos = torch::arange(0, S, torch::kInt64).view({1, S});
    auto hidden = kpos > qpos;
    if (c.windowed(l)) hidden = hidden.logical_or(kpos <= qpos - c.sliding_window);
    scores = scores.masked_fill(hidden, -std::numeric_limits<float>::infinity());
    torch::Tensor probs;
    if (lw.sinks.defined()) {  // GptOss's eager_attention_forward: the sink a last column, dropped after the softmax
      auto with_sink = torch::cat({scores, lw.sinks.view({1, nh, 1, 1}).expand({B, nh, T, 1})}, -1);
      with_sink = with_sink - std::get<0>(with_sink.max(-1, true));
      probs = torch::softmax(with_sink, -1).slice(-1, 0, S);
    } else {
      probs = torch::softmax(scores, -1);
    }
    auto attn = torch::matmul(probs, vv).transpose(1, 2).reshape({B, T, nh * c.attn_value_width()});
    x = x + project_out(attn, lw);

    auto m = rms_norm(x, lw.ffn_norm, c.rms_norm_eps).view({B * T, H});
    auto out = torch::zeros_like(m);
    const int ml = c.moe_layer(l);
    if (ml >= 0) {
      const auto [topw, topi] = route(m, lw, c);
      for (int e = 0; e < c.num_experts; ++e) {
        auto hit = (topi == e);                       // [N, k]
        auto rows = hit.any(-1).nonzero().view({-1});  // tokens routed to e
        if (rows.numel() == 0) continue;
        auto gate = (topw * hit.to(torch::kFloat32)).sum(-1).index_select(0, rows).unsqueeze(1);
        const ExpertWeights& ew = impl_->experts[ml][e];
        out.index_add_(0, rows, gated_mlp(m.index_select(0, rows), ew.w1, ew.w3, ew.w2, c, expert_bias(lw, e)) * gate);
      }
    }
    if (auto always = always_active_mlp(m, lw, c); always.defined()) out = out + always;
    x = x + out.view({B, T, H});
  }
  impl_->pos += T;
  auto h = rms_norm(all_positions ? x : x.slice(1, T - 1, T), impl_->w.final_norm, c.rms_norm_eps);
  auto logits = project(h, impl_->w.lm_head).contiguous();
  return std::vector<float>(logits.data_ptr<float>(), logits.data_ptr<float>() + logits.numel());
}

}  // namespace ferry::moe
