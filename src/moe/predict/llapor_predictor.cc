#include "moe/predict/llapor_predictor.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace ferry::moe {

LlaporPredictor::LlaporPredictor(LlaporModel model, const PredictorContext& ctx) : model_(std::move(model)), ctx_(ctx) {
  features_.resize(model_.feature_dims());
  probs_.resize(static_cast<std::size_t>(model_.shape.lookahead) * model_.shape.num_experts);
  reset_sequence();
}

void LlaporPredictor::reset_sequence() {
  current_.assign(static_cast<std::size_t>(model_.shape.num_layers) * model_.shape.num_experts, 0.f);
  previous_.clear();
  last_layer_ = -1;
}

void LlaporPredictor::finish_token() {
  if (model_.shape.previous_tokens > 0) {
    previous_.insert(previous_.begin(), current_);
    if (static_cast<int>(previous_.size()) > model_.shape.previous_tokens) previous_.pop_back();
  }
  std::fill(current_.begin(), current_.end(), 0.f);
  last_layer_ = -1;
}

void LlaporPredictor::observe(int layer, std::span<const int> experts, std::span<const float> weights) {
  const int L = model_.shape.num_layers, E = model_.shape.num_experts;
  if (layer < 0 || layer >= L) return;
  if (layer <= last_layer_) finish_token();
  float* row = current_.data() + static_cast<std::size_t>(layer) * E;
  std::fill(row, row + E, 0.f);
  const bool have = weights.size() == experts.size();
  for (std::size_t k = 0; k < experts.size(); ++k)
    if (experts[k] >= 0 && experts[k] < E) row[experts[k]] = have ? weights[k] : 1.f / static_cast<float>(experts.size());
  last_layer_ = layer;
  if (layer == L - 1) finish_token();
}

void LlaporPredictor::predict(const PredictInput& in, int lookahead, std::vector<std::vector<float>>& out) {
  out.clear();
  const auto& s = model_.shape;
  const int L = s.num_layers, E = s.num_experts;
  if (in.layer < 0 || in.layer + 1 >= L) return;
  const int D = std::min({lookahead, s.lookahead, L - 1 - in.layer});
  if (D <= 0) return;
  if (s.mode == LlaporMode::kHistory) {
    const float* cur = current_.data();
    if (last_layer_ < in.layer) {  // this layer was not observed: use the experts active now
      scratch_ = current_;
      float* row = scratch_.data() + static_cast<std::size_t>(in.layer) * E;
      std::fill(row, row + E, 0.f);
      for (int e : in.experts_now)
        if (e >= 0 && e < E) row[e] = 1.f / static_cast<float>(std::max<std::size_t>(1, in.experts_now.size()));
      cur = scratch_.data();
    }
    std::vector<const float*> prev;
    for (const auto& p : previous_) prev.push_back(p.data());
    model_.history_features(in.layer, cur, prev, features_.data());
    model_.forward(in.layer, features_.data(), probs_.data());
    for (int d = 0; d < D; ++d) out.emplace_back(probs_.begin() + d * E, probs_.begin() + (d + 1) * E);
    return;
  }
  if (!in.hidden || in.num_tokens <= 0) return;
  FERRY_REQUIRE(in.hidden_size == s.hidden_size, "LLaPor predictor: hidden size ", in.hidden_size,
                " differs from the fitted ", s.hidden_size);
  FERRY_REQUIRE(in.router_input || ctx_.routers != nullptr,
                "LLaPor predictor: the residual stream needs the model's routers (ffn_norm) to normalise");
  const int H = s.hidden_size;
  // This layer's gate weights per token: observed (one token) or recomputed with the router
  // (softmax, top-k renormalised as in Mixtral).
  const bool observed = in.num_tokens == 1 && last_layer_ == in.layer;
  std::vector<float> gw(E);
  std::vector<int> order(E);
  std::vector<double> miss(static_cast<std::size_t>(D) * E, 1.0);  // prod_t (1 - p_t)
  x_.resize(H);
  for (int t = 0; t < in.num_tokens; ++t) {
    const float* h = in.hidden + static_cast<std::size_t>(t) * H;
    if (in.router_input) {
      std::copy(h, h + H, x_.begin());
    } else {
      double ss = 0;
      for (int i = 0; i < H; ++i) ss += static_cast<double>(h[i]) * h[i];
      const float inv = static_cast<float>(1.0 / std::sqrt(ss / H + ctx_.routers->rms_norm_eps));
      const float* g = ctx_.routers->ffn_norm[in.layer];
      for (int i = 0; i < H; ++i) x_[i] = h[i] * inv * g[i];
    }
    const float* gate = nullptr;
    if (s.routing_features && observed) {
      gate = current_.data() + static_cast<std::size_t>(in.layer) * E;
    } else if (s.routing_features && ctx_.routers) {
      const float* R = ctx_.routers->router[in.layer];
      float mx = -1e30f;
      for (int e = 0; e < E; ++e) {
        float acc = 0;
        for (int i = 0; i < H; ++i) acc += R[static_cast<std::size_t>(e) * H + i] * x_[i];
        gw[e] = acc;
        mx = std::max(mx, acc);
      }
      for (int e = 0; e < E; ++e) order[e] = e;
      std::partial_sort(order.begin(), order.begin() + s.top_k, order.end(),
                        [&](int a, int b) { return gw[a] > gw[b]; });
      double z = 0;
      for (int k = 0; k < s.top_k; ++k) z += std::exp(gw[order[k]] - mx);
      std::vector<float> w(E, 0.f);
      for (int k = 0; k < s.top_k; ++k) w[order[k]] = static_cast<float>(std::exp(gw[order[k]] - mx) / z);
      gw = w;
      gate = gw.data();
    }
    model_.hidden_features(in.layer, x_.data(), gate, features_.data());
    model_.forward(in.layer, features_.data(), probs_.data());
    for (int i = 0; i < D * E; ++i) miss[i] *= 1.0 - probs_[i];
  }
  for (int d = 0; d < D; ++d) {
    std::vector<float> p(E);
    for (int e = 0; e < E; ++e) p[e] = static_cast<float>(1.0 - miss[static_cast<std::size_t>(d) * E + e]);
    out.push_back(std::move(p));
  }
}

std::unique_ptr<Predictor> load_llapor_predictor(const std::string& dir, const PredictorContext& ctx) {
  auto m = LlaporModel::load(dir);
  const auto& s = m.shape;
  FERRY_REQUIRE(ctx.num_layers == 0 || ctx.num_layers == s.num_layers, "LLaPor predictor '", dir, "' was fitted on ",
                s.num_layers, " layers, the model has ", ctx.num_layers);
  FERRY_REQUIRE(ctx.num_experts == 0 || ctx.num_experts == s.num_experts, "LLaPor predictor '", dir,
                "' was fitted on ", s.num_experts, " experts, the model has ", ctx.num_experts);
  FERRY_REQUIRE(!ctx.routers || s.mode != LlaporMode::kHidden || ctx.routers->hidden_size == s.hidden_size,
                "LLaPor predictor '", dir, "' was fitted on hidden size ", s.hidden_size, ", the model has ",
                ctx.routers ? ctx.routers->hidden_size : 0);
  return std::make_unique<LlaporPredictor>(std::move(m), ctx);
}

}  // namespace ferry::moe
