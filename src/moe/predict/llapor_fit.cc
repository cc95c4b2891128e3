#include "moe/predict/llapor_fit.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <map>
#include <set>

#include <torch/torch.h>

#include "core/error.h"
#include "moe/predict/cooccurrence_predictor.h"

namespace ferry::moe {
namespace {

struct Rows {
  int features = 0, outputs = 0;
  std::vector<float> x, y, mask;  // [n x features], [n x outputs] x 2
  int n() const { return features ? static_cast<int>(x.size() / features) : 0; }
};

// The torch twin of LlaporNet.
struct TorchNet : torch::nn::Module {
  TorchNet(int f, int w, int o, bool gated, double dropout) : gated(gated), p(dropout) {
    in = register_module("in", torch::nn::Linear(f, w));
    if (gated) {
      res = register_module("res", torch::nn::Linear(w, w));
      gate = register_module("gate", torch::nn::Linear(w, w));
    }
    out = register_module("out", torch::nn::Linear(w, o));
  }
  torch::Tensor forward(torch::Tensor x) {
    auto h = torch::dropout(torch::gelu(in(x)), p, is_training());
    if (gated) h = h + torch::dropout(torch::gelu(res(h)) * torch::sigmoid(gate(h)), p, is_training());
    return out(h);  // logits
  }
  bool gated;
  double p;
  torch::nn::Linear in{nullptr}, res{nullptr}, gate{nullptr}, out{nullptr};
};

LlaporDense to_dense(const torch::nn::Linear& l) {
  LlaporDense d;
  auto w = l->weight.detach().contiguous();
  auto b = l->bias.detach().contiguous();
  d.out = static_cast<int>(w.size(0));
  d.in = static_cast<int>(w.size(1));
  d.weight.assign(w.data_ptr<float>(), w.data_ptr<float>() + w.numel());
  d.bias.assign(b.data_ptr<float>(), b.data_ptr<float>() + b.numel());
  return d;
}

bool contains(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

}  // namespace

LlaporSplit llapor_split(const PredictorTrace& t, const LlaporFitOptions& o) {
  const auto seqs = t.sequences();
  LlaporSplit s;
  if (!o.train_sequences.empty() || !o.test_sequences.empty()) {
    FERRY_REQUIRE(!o.train_sequences.empty() && !o.test_sequences.empty(),
                  "give both the training and the test sequences (or neither)");
    for (int q : o.train_sequences) {
      FERRY_REQUIRE(contains(seqs, q), "training sequence ", q, " is not in trace '", t.trace.path, "' (it has ",
                    seqs.size(), " sequences with complete tokens)");
      FERRY_REQUIRE(!contains(o.test_sequences, q), "sequence ", q, " is both a training and a test sequence");
    }
    for (int q : o.test_sequences)
      FERRY_REQUIRE(contains(seqs, q), "test sequence ", q, " is not in trace '", t.trace.path, "' (it has ",
                    seqs.size(), " sequences with complete tokens)");
    s.train = o.train_sequences;
    s.test = o.test_sequences;
    return s;
  }
  FERRY_REQUIRE_IN(o.heldout_fraction, 0, 1, "()", "held-out fraction");
  FERRY_REQUIRE(seqs.size() >= 2, "trace '", t.trace.path, "' has ", seqs.size(),
                " sequence(s); a held-out split needs at least 2");
  const std::size_t test = std::clamp<std::size_t>(
      static_cast<std::size_t>(std::ceil(o.heldout_fraction * static_cast<double>(seqs.size()) - 1e-9)), 1, seqs.size() - 1);
  s.train.assign(seqs.begin(), seqs.end() - static_cast<std::ptrdiff_t>(test));
  s.test.assign(seqs.end() - static_cast<std::ptrdiff_t>(test), seqs.end());
  return s;
}

std::vector<int> llapor_groups(const PredictorTrace& t, const std::vector<int>& train, const LlaporFitOptions& o) {
  const int L = t.trace.num_layers, S = L - 1;  // S source layers
  std::vector<int> g(L, 1);
  g[L - 1] = -1;
  auto positional = [&] {
    const int edge = std::max(1, S / 4);
    for (int l = 0; l < S; ++l) g[l] = l < edge ? 0 : (l >= S - edge ? 2 : 1);
    if (S <= 2)
      for (int l = 0; l < S; ++l) g[l] = l == 0 ? 0 : 2;
  };
  FERRY_REQUIRE(o.groups == "auto" || o.groups == "positional" || o.groups == "shallow" || o.groups == "gated",
                "invalid groups '", o.groups, "': expected auto, positional, shallow or gated");
  if (o.groups == "shallow" || o.groups == "gated") {
    for (int l = 0; l < S; ++l) g[l] = o.groups == "shallow" ? 0 : 1;
    return g;
  }
  if (o.groups == "positional" || S < 3) {
    positional();
    return g;
  }
  // Difficulty of each source layer: 1 - co-occurrence next-layer precision (in-sample).
  CooccurrenceOptions co;
  co.max_lookahead = 1;
  co.learn_online = false;
  CooccurrencePredictor table(L, t.trace.num_experts, std::max(1, t.trace.top_k), co);
  for (const auto& tok : t.trace.tokens)
    if (contains(train, tok.sequence)) table.add_token(tok.experts);
  std::vector<double> diff(S, 0), n(S, 0);
  std::vector<std::vector<float>> out;
  std::vector<int> order(t.trace.num_experts);
  for (const auto& tok : t.trace.tokens) {
    if (!contains(train, tok.sequence)) continue;
    for (int l = 0; l < S; ++l) {
      PredictInput in;
      in.layer = l;
      in.experts_now = tok.experts[l];
      table.predict(in, 1, out);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return out[0][a] > out[0][b]; });
      const auto& act = tok.experts[l + 1];
      double hit = 0;
      for (int k = 0; k < t.trace.top_k; ++k) hit += std::count(act.begin(), act.end(), order[k]) > 0;
      diff[l] += 1 - hit / t.trace.top_k;
      n[l] += 1;
    }
  }
  for (int l = 0; l < S; ++l) diff[l] /= std::max(1.0, n[l]);
  const double mean = std::accumulate(diff.begin(), diff.end(), 0.0) / S;
  int head = 0, tail = 0;
  while (head < S && diff[head] <= mean) ++head;
  while (tail < S && diff[S - 1 - tail] <= mean) ++tail;
  if (head == 0 || tail == 0 || head + tail >= S) {
    positional();
    return g;
  }
  for (int l = 0; l < S; ++l) g[l] = l < head ? 0 : (l >= S - tail ? 2 : 1);
  return g;
}

LlaporModel fit_llapor(const PredictorTrace& t, const LlaporFitOptions& o,
                       const std::function<void(int, int, const std::string&)>& on_progress) {
  const RoutingTrace& tr = t.trace;
  const int L = tr.num_layers, E = tr.num_experts, D = o.lookahead;
  FERRY_REQUIRE(L >= 2, "trace '", tr.path, "' has ", L, " layer(s); predicting later layers needs at least 2");
  FERRY_REQUIRE_IN(D, 1, L - 1, "[]", "--lookahead");
  FERRY_REQUIRE_GE(o.width, 1, "--width");
  FERRY_REQUIRE_GE(o.epochs, 1, "--epochs");
  FERRY_REQUIRE_GE(o.batch, 1, "--batch");
  FERRY_REQUIRE_GE(o.max_rows, 1, "--max-rows");
  FERRY_REQUIRE_FINITE(o.lr, >, 0, "--lr");
  FERRY_REQUIRE_IN(o.dropout, 0, 1, "[)", "--dropout");
  std::string mode = o.mode;
  if (mode == "auto") mode = t.has_hidden() ? "hidden" : "history";
  FERRY_REQUIRE(mode == "hidden" || mode == "history", "invalid mode '", o.mode, "': expected hidden, history or auto");
  FERRY_REQUIRE(mode == "history" || t.has_hidden(), "hidden mode needs hidden states, but '", tr.path,
                ".hidden.bin' is missing (record with ferry moe trace, or use --mode history)");
  const auto split = llapor_split(t, o);

  LlaporModel m;
  auto& s = m.shape;
  s.mode = mode == "hidden" ? LlaporMode::kHidden : LlaporMode::kHistory;
  s.num_layers = L;
  s.num_experts = E;
  s.top_k = tr.top_k;
  s.lookahead = D;
  s.width = o.width;
  if (s.mode == LlaporMode::kHidden) {
    FERRY_REQUIRE_OP(o.pca_dims, >=, 1, "--pca-dims");
    s.hidden_size = t.hidden_size;
    s.pca_dims = std::min(o.pca_dims, t.hidden_size);
    s.routing_features = o.routing_features;
  } else {
    FERRY_REQUIRE_OP(o.context_layers, >=, 1, "--context-layers");
    FERRY_REQUIRE_OP(o.previous_tokens, >=, 0, "--previous-tokens");
    s.context_layers = o.context_layers;
    s.previous_tokens = o.previous_tokens;
  }
  const bool share = o.share_layers;
  const auto groups = llapor_groups(t, split.train, o);
  // Networks: per layer, or per group when shared.
  m.net_of_layer.assign(L, -1);
  std::vector<bool> gated;
  std::vector<std::vector<int>> layers_of;
  std::map<int, int> net_of_group;
  for (int l = 0; l + 1 < L; ++l) {
    if (share && net_of_group.count(groups[l])) {
      m.net_of_layer[l] = net_of_group[groups[l]];
    } else {
      m.net_of_layer[l] = static_cast<int>(gated.size());
      net_of_group[groups[l]] = m.net_of_layer[l];
      gated.push_back(groups[l] == 1);
      layers_of.emplace_back();
    }
    layers_of[m.net_of_layer[l]].push_back(l);
  }

  // Training tokens and, per token, the previous tokens of its sequence.
  std::vector<std::size_t> train_tokens;
  std::vector<std::vector<float>> weights(tr.tokens.size());
  for (std::size_t i = 0; i < tr.tokens.size(); ++i)
    if (contains(split.train, tr.tokens[i].sequence)) train_tokens.push_back(i);
  FERRY_REQUIRE(!train_tokens.empty(), "no training tokens in trace '", tr.path, "'");
  if (s.mode == LlaporMode::kHistory || s.routing_features)
    for (std::size_t i = 0; i < tr.tokens.size(); ++i)
      routing_to_weights(tr.tokens[i].experts, tr.tokens[i].weights, E, weights[i]);

  // PCA per source layer on the training rows.
  if (s.mode == LlaporMode::kHidden) {
    m.pca.resize(L);
    for (int l = 0; l + 1 < L; ++l) {
      std::vector<float> rows;
      int n = 0;
      for (std::size_t i : train_tokens)
        if (const float* h = t.hidden_at(i, l)) {
          rows.insert(rows.end(), h, h + t.hidden_size);
          ++n;
        }
      FERRY_REQUIRE(n >= 2, "layer ", l, " has ", n, " training hidden states in '", tr.path, ".hidden.bin'");
      m.pca[l] = fit_pca(rows, n, t.hidden_size, s.pca_dims);
    }
  }

  const int F = m.feature_dims(), O = D * E;
  torch::manual_seed(o.seed);
  std::mt19937_64 rng(o.seed);
  const int total_epochs = o.epochs * static_cast<int>(gated.size());
  int done = 0;
  for (std::size_t net_i = 0; net_i < gated.size(); ++net_i) {
    Rows r;
    r.features = F;
    r.outputs = O;
    std::vector<float> f(F);
    for (std::size_t ti = 0; ti < train_tokens.size(); ++ti) {
      const std::size_t i = train_tokens[ti];
      const TraceToken& tok = tr.tokens[i];
      for (int l : layers_of[net_i]) {
        if (s.mode == LlaporMode::kHidden) {
          const float* h = t.hidden_at(i, l);
          if (!h) continue;
          m.hidden_features(l, h, weights[i].empty() ? nullptr : weights[i].data() + static_cast<std::size_t>(l) * E,
                            f.data());
        } else {
          std::vector<const float*> prev;
          for (int hh = 1; hh <= s.previous_tokens && ti >= static_cast<std::size_t>(hh); ++hh) {
            const std::size_t j = train_tokens[ti - hh];
            if (tr.tokens[j].sequence != tok.sequence) break;
            prev.push_back(weights[j].data());
          }
          m.history_features(l, weights[i].data(), prev, f.data());
        }
        r.x.insert(r.x.end(), f.begin(), f.end());
        for (int d = 0; d < D; ++d)
          for (int e = 0; e < E; ++e) {
            const bool valid = l + 1 + d < L;
            const bool on = valid && std::count(tok.experts[l + 1 + d].begin(), tok.experts[l + 1 + d].end(), e) > 0;
            r.y.push_back(on ? 1.f : 0.f);
            r.mask.push_back(valid ? 1.f : 0.f);
          }
      }
    }
    int n = r.n();
    FERRY_REQUIRE(n > 0, "no training rows for the layers of network ", net_i);
    auto X = torch::from_blob(r.x.data(), {n, F}).clone();
    auto Y = torch::from_blob(r.y.data(), {n, O}).clone();
    auto M = torch::from_blob(r.mask.data(), {n, O}).clone();
    if (n > o.max_rows) {
      auto idx = torch::randperm(n, torch::kInt64).slice(0, 0, o.max_rows);
      X = X.index_select(0, idx);
      Y = Y.index_select(0, idx);
      M = M.index_select(0, idx);
      n = o.max_rows;
    }
    auto net = std::make_shared<TorchNet>(F, o.width, O, gated[net_i], o.dropout);
    torch::optim::Adam opt(net->parameters(), torch::optim::AdamOptions(o.lr).weight_decay(o.weight_decay));
    net->train();
    for (int ep = 0; ep < o.epochs; ++ep) {
      auto perm = torch::randperm(n, torch::kInt64);
      double loss_sum = 0;
      int steps = 0;
      for (int b = 0; b < n; b += o.batch) {
        auto idx = perm.slice(0, b, std::min(n, b + o.batch));
        auto logits = net->forward(X.index_select(0, idx));
        auto mk = M.index_select(0, idx);
        auto loss = (torch::binary_cross_entropy_with_logits(logits, Y.index_select(0, idx), {}, {},
                                                             at::Reduction::None) * mk).sum() /
                    mk.sum().clamp_min(1);
        opt.zero_grad();
        loss.backward();
        opt.step();
        loss_sum += loss.item<double>();
        ++steps;
      }
      ++done;
      if (on_progress) {
        char msg[96];
        std::snprintf(msg, sizeof msg, "net %zu/%zu (%s) loss %.4f", net_i + 1, gated.size(),
                      gated[net_i] ? "gated" : "shallow", loss_sum / std::max(1, steps));
        on_progress(done, total_epochs, msg);
      }
    }
    net->eval();
    LlaporNet ln;
    ln.gated = gated[net_i];
    ln.in = to_dense(net->in);
    if (ln.gated) {
      ln.res = to_dense(net->res);
      ln.gate = to_dense(net->gate);
    }
    ln.out = to_dense(net->out);
    m.nets.push_back(std::move(ln));
  }
  nlohmann::json gj = nlohmann::json::array();
  for (int l = 0; l < L; ++l) gj.push_back(groups[l]);
  m.report = {{"trace", tr.path}, {"groups", gj}, {"grouping", o.groups}, {"share_layers", share},
              {"train_sequences", split.train}, {"test_sequences", split.test}, {"epochs", o.epochs},
              {"lr", o.lr}, {"dropout", o.dropout}, {"seed", o.seed}};
  if (s.mode == LlaporMode::kHidden) {
    nlohmann::json ex = nlohmann::json::array();
    for (int l = 0; l + 1 < L; ++l) ex.push_back(m.pca[l].explained);
    m.report["pca_explained"] = ex;
  }
  return m;
}

}  // namespace ferry::moe
