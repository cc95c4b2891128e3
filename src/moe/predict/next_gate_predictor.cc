// Next-gate speculation (Pre-gated MoE, Hwang et al. 2024; mixtral-offloading, Eliseev & Mazur
// 2023): the hidden state changes little between adjacent layers, so the next layer's router
// applied to the current hidden state, x_l -> top_k(W_{l+1} . rmsnorm(x_l)), predicts its experts.
#include <algorithm>
#include <cmath>
#include <numeric>

#include <torch/types.h>
#include <torch/utils.h>

#include "core/error.h"
#include "moe/model/weights.h"
#include "moe/predict/predictor.h"

namespace ferry::moe {
namespace {

// Router logits -> the scores the choice ranks when a bias is added: sigmoid or softmax, plus the
// bias (without one, the logits rank the same as either).
void to_choice_scores(std::vector<float>& logits, const float* bias, bool sigmoid) {
  if (sigmoid) {
    for (float& v : logits) v = 1.f / (1.f + std::exp(-v));
  } else {
    const float top = *std::max_element(logits.begin(), logits.end());
    double sum = 0;
    for (float& v : logits) sum += (v = std::exp(v - top));
    for (float& v : logits) v = static_cast<float>(v / sum);
  }
  for (std::size_t e = 0; e < logits.size(); ++e) logits[e] += bias[e];
}

class NextGatePredictor : public Predictor {
 public:
  explicit NextGatePredictor(const RouterView* routers) : r_(routers) {
    FERRY_REQUIRE(r_ != nullptr, "the next-gate predictor needs the model's routers");
  }
  std::string name() const override { return "next-gate"; }

  // Per predicted layer, the tokens' normalised states as one [T x H] matrix times the router's
  // transpose (one BLAS product: a scalar dot per expert cost 8 % of a DeepSeek-V3 token), then
  // each token's top-k.
  void predict(const PredictInput& in, int lookahead, std::vector<std::vector<float>>& out) override {
    out.clear();
    if (!in.hidden || in.num_tokens == 0) return;
    const int H = r_->hidden_size, E = r_->num_experts, T = in.num_tokens;
    // Each token's state (for a router input, the residual direction) and its rmsnorm scale.
    std::vector<float> base(static_cast<std::size_t>(T) * H), inv(T);
    for (int t = 0; t < T; ++t) {
      const float* h = in.hidden + static_cast<std::size_t>(t) * H;
      float* x = base.data() + static_cast<std::size_t>(t) * H;
      if (in.router_input) {  // undo layer `layer`'s norm gain: rmsnorm is scale-invariant, so this
                              // recovers the direction of the residual stream
        const float* g = r_->ffn_norm[in.layer];
        for (int i = 0; i < H; ++i) x[i] = g[i] != 0.f ? h[i] / g[i] : 0.f;
      } else {
        std::copy(h, h + H, x);
      }
      double ss = 0;
      for (int i = 0; i < H; ++i) ss += static_cast<double>(x[i]) * x[i];
      inv[t] = static_cast<float>(1.0 / std::sqrt(ss / H + r_->rms_norm_eps));
    }
    std::vector<float> xn(base.size()), logits(static_cast<std::size_t>(T) * E), row(E);
    std::vector<int> order(E);
    const auto f32 = torch::TensorOptions().dtype(torch::kFloat32);
    for (int d = 0; d < lookahead && in.layer + 1 + d < r_->num_layers; ++d) {
      const int l = in.layer + 1 + d;
      const float* g = r_->ffn_norm[l];
      for (int t = 0; t < T; ++t)
        for (int i = 0; i < H; ++i) {
          const std::size_t at = static_cast<std::size_t>(t) * H + i;
          xn[at] = base[at] * inv[t] * g[i];
        }
      torch::Tensor into = torch::from_blob(logits.data(), {T, E}, f32);
      torch::mm_out(into, torch::from_blob(xn.data(), {T, H}, f32),
                    torch::from_blob(const_cast<float*>(r_->router[l]), {E, H}, f32).t());
      std::vector<float> score(E, 0.f);
      for (int t = 0; t < T; ++t) {
        std::copy_n(logits.data() + static_cast<std::size_t>(t) * E, E, row.data());
        if (l < static_cast<int>(r_->logit_bias.size()) && r_->logit_bias[l])
          for (int e = 0; e < E; ++e) row[e] += r_->logit_bias[l][e];
        if (l < static_cast<int>(r_->bias.size()) && r_->bias[l]) to_choice_scores(row, r_->bias[l], r_->sigmoid);
        std::iota(order.begin(), order.end(), 0);
        std::partial_sort(order.begin(), order.begin() + r_->top_k, order.end(),
                          [&](int a, int b) { return row[a] > row[b]; });
        for (int k = 0; k < r_->top_k; ++k) score[order[k]] += 1.f / T;
      }
      out.push_back(std::move(score));
    }
  }

 private:
  const RouterView* r_;  // owned by the engine, outlives the predictor
};

}  // namespace

std::unique_ptr<Predictor> make_next_gate_predictor(const RouterView* routers) {
  return std::make_unique<NextGatePredictor>(routers);
}

RouterView router_view(const DenseWeights& w) {
  const MoeConfig& c = w.config;
  RouterView rv{c.num_moe_layers(), c.num_experts, c.hidden_size, c.top_k, c.rms_norm_eps, {}, {}, {},
                c.scoring_func == "sigmoid", {}};
  for (const auto& lw : w.layers) {
    if (!lw.router.defined()) continue;  // a dense layer
    FERRY_CHECK(lw.router.is_contiguous() && lw.ffn_norm.is_contiguous(), "router views need contiguous tensors");
    rv.router.push_back(lw.router.data_ptr<float>());
    rv.ffn_norm.push_back(lw.ffn_norm.data_ptr<float>());
    rv.bias.push_back(lw.router_bias.defined() ? lw.router_bias.data_ptr<float>() : nullptr);
    rv.logit_bias.push_back(lw.router_logit_bias.defined() ? lw.router_logit_bias.data_ptr<float>() : nullptr);
  }
  return rv;
}

}  // namespace ferry::moe
