#include "moe/model/pretrain.h"

#include <cmath>
#include <filesystem>
#include <map>
#include <random>

#include <torch/torch.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/corpus.h"
#include "moe/model/tiny_model.h"

namespace ferry::moe {

MoeConfig pretrain_default_config() {
  MoeConfig c;
  c.vocab_size = 256;
  c.hidden_size = 128;
  c.intermediate_size = 256;
  c.num_layers = 4;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 32;
  c.num_experts = 8;
  c.top_k = 2;
  c.max_position_embeddings = 1024;
  c.rope_theta = 10000;
  c.tokenizer = "byte";
  return c;
}

namespace {

// Parameters by Mixtral name; the forward below reads them by name.
struct TrainModel {
  MoeConfig c;
  TensorNames n;
  std::map<std::string, torch::Tensor> p;
  explicit TrainModel(const MoeConfig& cfg) : c(cfg), n(cfg) {}
  const torch::Tensor& at(const std::string& name) const { return p.at(name); }

  torch::Tensor rms(const torch::Tensor& x, const torch::Tensor& w) const {
    return x * torch::rsqrt(x.pow(2).mean(-1, true) + c.rms_norm_eps) * w;
  }

  // Returns logits [B, T, V]; adds the load-balancing loss of every layer to aux.
  torch::Tensor forward(const torch::Tensor& ids, torch::Tensor& aux) const {
    const std::int64_t B = ids.size(0), T = ids.size(1), H = c.hidden_size, D = c.head_dim;
    const std::int64_t nh = c.num_heads, kvh = c.num_kv_heads, E = c.num_experts;
    auto x = at(n.embed()).index_select(0, ids.view({-1})).view({B, T, H});
    auto inv = 1.0 / torch::pow(c.rope_theta, torch::arange(0, D, 2, torch::kFloat64) / static_cast<double>(D));
    auto emb = torch::outer(torch::arange(0, T, torch::kFloat64), inv);
    emb = torch::cat({emb, emb}, -1);
    auto cos = emb.cos().to(torch::kFloat32), sin = emb.sin().to(torch::kFloat32);
    auto rope = [&](const torch::Tensor& t) {
      return t * cos + torch::cat({-t.slice(-1, D / 2, D), t.slice(-1, 0, D / 2)}, -1) * sin;
    };
    auto mask = torch::ones({T, T}, torch::kBool).triu(1);
    aux = torch::zeros({});
    for (int l = 0; l < c.num_layers; ++l) {
      auto a = rms(x, at(n.attn_norm(l)));
      auto q = rope(torch::matmul(a, at(n.attn(l, 'q')).t()).view({B, T, nh, D}).transpose(1, 2));
      auto k = rope(torch::matmul(a, at(n.attn(l, 'k')).t()).view({B, T, kvh, D}).transpose(1, 2));
      auto v = torch::matmul(a, at(n.attn(l, 'v')).t()).view({B, T, kvh, D}).transpose(1, 2);
      k = k.repeat_interleave(nh / kvh, 1);
      v = v.repeat_interleave(nh / kvh, 1);
      auto s = torch::matmul(q, k.transpose(2, 3)) / std::sqrt(static_cast<double>(D));
      s = s.masked_fill(mask, -std::numeric_limits<float>::infinity());
      auto o = torch::matmul(torch::softmax(s, -1), v).transpose(1, 2).reshape({B, T, nh * D});
      x = x + torch::matmul(o, at(n.attn(l, 'o')).t());
      auto m = rms(x, at(n.ffn_norm(l))).view({B * T, H});
      auto probs = torch::softmax(torch::matmul(m, at(n.router(l)).t()), -1);
      auto [topw, topi] = probs.topk(c.top_k, -1);
      if (c.norm_topk_prob) topw = topw / topw.sum(-1, true);
      auto out = torch::zeros_like(m);
      auto chosen = torch::zeros({E}, torch::kFloat32);
      for (int e = 0; e < E; ++e) {
        auto hit = (topi == e);
        auto rows = hit.any(-1).nonzero().view({-1});
        if (rows.numel() == 0) continue;
        chosen[e] = static_cast<double>(rows.numel());
        auto gate = (topw * hit.to(torch::kFloat32)).sum(-1).index_select(0, rows).unsqueeze(1);
        auto xe = m.index_select(0, rows);
        auto h = torch::silu(torch::matmul(xe, at(n.expert(l, e, 1)).t())) * torch::matmul(xe, at(n.expert(l, e, 3)).t());
        out = out.index_add(0, rows, torch::matmul(h, at(n.expert(l, e, 2)).t()) * gate);
      }
      auto f = chosen / static_cast<double>(B * T * c.top_k);
      aux = aux + static_cast<double>(E) * (f * probs.mean(0)).sum();
      x = x + out.view({B, T, H});
    }
    return torch::matmul(rms(x, at(n.final_norm())), at(n.lm_head()).t());
  }
};

std::vector<NamedTensor> export_tensors(const TrainModel& m, const std::vector<NamedTensor>& like) {
  std::vector<NamedTensor> out;
  for (const auto& t : like) {
    auto v = m.at(t.name).detach().contiguous();
    out.push_back({t.name, t.shape, std::vector<float>(v.data_ptr<float>(), v.data_ptr<float>() + v.numel())});
  }
  return out;
}

}  // namespace

PretrainReport pretrain(const PretrainOptions& o, const std::function<void(int, int, double)>& on_step) {
  FERRY_REQUIRE(!o.out_dir.empty(), "pretrain needs --out");
  FERRY_REQUIRE(o.config.vocab_size == 256, "pretrain uses byte tokens: vocab_size must be 256");
  FERRY_REQUIRE_POSITIVE(o.steps, "pretrain: steps");
  FERRY_REQUIRE_POSITIVE(o.batch, "pretrain: batch");
  FERRY_REQUIRE_OP(o.seq_len, >, 1, "pretrain: seq_len");
  FERRY_REQUIRE(o.seq_len <= o.config.max_position_embeddings, "--seq-len exceeds max_position_embeddings");
  o.config.validate("pretrain");
  const std::string corpus = o.corpus.empty() ? default_corpus_path() : o.corpus;
  FERRY_REQUIRE(!corpus.empty(), "no --corpus given and no Python standard library found");
  CorpusOptions co;
  co.max_bytes = o.corpus_bytes;
  const std::string text = read_corpus(corpus, co);
  const std::size_t held = static_cast<std::size_t>(text.size() * o.heldout_fraction);
  FERRY_REQUIRE(text.size() - held > static_cast<std::size_t>(o.seq_len) * 4 && held > static_cast<std::size_t>(o.seq_len) + 1,
                "corpus '", corpus, "' is too small (", text.size(), " bytes) for sequences of ", o.seq_len);
  auto all = torch::empty({static_cast<std::int64_t>(text.size())}, torch::kInt64);
  for (std::size_t i = 0; i < text.size(); ++i) all[i] = static_cast<std::int64_t>(static_cast<unsigned char>(text[i]));
  const std::int64_t n_train = static_cast<std::int64_t>(text.size() - held);
  auto train = all.slice(0, 0, n_train), heldout = all.slice(0, n_train);

  torch::manual_seed(o.seed);
  std::mt19937_64 rng(o.seed);
  const auto init = random_tensors(o.config, o.seed);
  write_checkpoint((std::filesystem::path(o.out_dir) / "random-init").string(), o.config, init, {o.dtype, 1});
  TrainModel model(o.config);
  std::vector<torch::Tensor> params;
  for (const auto& t : init) {
    auto v = torch::from_blob(const_cast<float*>(t.values.data()), t.shape).clone().set_requires_grad(true);
    model.p[t.name] = v;
    params.push_back(v);
  }
  torch::optim::AdamW opt(params, torch::optim::AdamWOptions(o.lr).weight_decay(0.01).betas({0.9, 0.95}));

  auto batch_at = [&](const torch::Tensor& src, const std::vector<std::int64_t>& starts) {
    std::vector<torch::Tensor> xs, ys;
    for (auto s : starts) {
      xs.push_back(src.slice(0, s, s + o.seq_len));
      ys.push_back(src.slice(0, s + 1, s + o.seq_len + 1));
    }
    return std::make_pair(torch::stack(xs), torch::stack(ys));
  };
  auto heldout_loss = [&]() {
    torch::NoGradGuard ng;
    const std::int64_t span = heldout.size(0) - o.seq_len - 1;
    double total = 0;
    for (int b = 0; b < o.eval_batches; ++b) {
      std::vector<std::int64_t> starts;
      for (int i = 0; i < o.batch; ++i) starts.push_back((span * (b * o.batch + i)) / (o.eval_batches * o.batch));
      auto [x, y] = batch_at(heldout, starts);
      torch::Tensor aux;
      auto logits = model.forward(x, aux);
      total += torch::cross_entropy_loss(logits.view({-1, o.config.vocab_size}), y.reshape({-1})).item<double>();
    }
    return total / o.eval_batches;
  };

  PretrainReport r;
  r.train_bytes = static_cast<std::uint64_t>(n_train);
  r.heldout_bytes = held;
  r.random_heldout_ppl = std::exp(heldout_loss());
  const double t0 = now_s();
  std::vector<double> recent;
  for (int step = 0; step < o.steps; ++step) {
    const double elapsed_frac = (now_s() - t0) / (o.max_minutes * 60);
    if (elapsed_frac > 1) break;
    // Progress is the larger of steps and wall time, so a run cut short by the clock still decays.
    const double progress = std::max(static_cast<double>(step) / o.steps, elapsed_frac);
    const double warm = std::min(1.0, (step + 1.0) / std::max(1, o.warmup_steps));
    const double cosine = 0.1 + 0.9 * 0.5 * (1 + std::cos(M_PI * progress));
    for (auto& g : opt.param_groups()) static_cast<torch::optim::AdamWOptions&>(g.options()).lr(o.lr * warm * cosine);
    std::vector<std::int64_t> starts;
    for (int i = 0; i < o.batch; ++i) starts.push_back(static_cast<std::int64_t>(rng() % (n_train - o.seq_len - 1)));
    auto [x, y] = batch_at(train, starts);
    torch::Tensor aux;
    auto logits = model.forward(x, aux);
    auto ce = torch::cross_entropy_loss(logits.view({-1, o.config.vocab_size}), y.reshape({-1}));
    auto loss = ce + o.aux_loss_coef * aux;
    opt.zero_grad();
    loss.backward();
    torch::nn::utils::clip_grad_norm_(params, 1.0);
    opt.step();
    const double l = ce.item<double>();
    recent.push_back(l);
    if (recent.size() > 20) recent.erase(recent.begin());
    r.steps_done = step + 1;
    if (on_step) on_step(step + 1, o.steps, l);
  }
  r.seconds = now_s() - t0;
  for (double v : recent) r.final_train_loss += v / recent.size();
  r.heldout_ppl = std::exp(heldout_loss());
  write_checkpoint(o.out_dir, o.config, export_tensors(model, init), {o.dtype, 1});
  return r;
}

}  // namespace ferry::moe
