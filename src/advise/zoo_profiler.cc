#include "advise/zoo_profiler.h"

#include <torch/torch.h>

#include <algorithm>
#include <vector>

#include "core/clock.h"
#include "core/error.h"
#include "ps/sgd_optimizer.h"
#include "train/models/model.h"

namespace ferry::advise {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// The fastest repetition: on a shared machine other processes only ever add time.
double fastest(const std::vector<double>& v) { return v.empty() ? 0.0 : *std::min_element(v.begin(), v.end()); }

// One way to feed a model: input and labels, and the loss of its output.
struct Feed {
  at::Tensor input, labels;
  bool tokens = false;
  at::Tensor loss(const at::Tensor& out) const {
    if (!tokens) return torch::nn::functional::cross_entropy(out, labels);
    return torch::nn::functional::cross_entropy(out.reshape({-1, out.size(-1)}), labels.reshape({-1}));
  }
};

constexpr std::int64_t kTokenContext = 128;  // token models: sequence length of the profile batch
constexpr std::int64_t kTokenVocab = 256;    // byte ids

Feed image_feed(std::int64_t batch) {
  return {torch::randn({batch, 1, 28, 28}), torch::randint(0, 10, {batch}, torch::kLong), false};
}
Feed token_feed(std::int64_t batch) {
  return {torch::randint(0, kTokenVocab, {batch, kTokenContext}, torch::kLong),
          torch::randint(0, kTokenVocab, {batch, kTokenContext}, torch::kLong), true};
}

}  // namespace

ModelProfile profile_zoo_model(const std::string& name, const ZooProfileOptions& o) {
  FERRY_REQUIRE_OP(o.batch, >=, 1, "--batch");
  FERRY_REQUIRE_OP(o.rounds, >=, 1, "profile: rounds");
  FERRY_REQUIRE_OP(o.iterations, >=, 1, "profile: iterations");
  FERRY_REQUIRE_OP(o.warmup, >=, 0, "profile: warmup");
  auto model = train::make_model(name, o.seed);  // InvalidArgument for an unknown name
  torch::manual_seed(static_cast<std::int64_t>(o.seed));
  const int threads_before = at::get_num_threads();
  at::set_num_threads(1);
  struct Restore {
    int n;
    ~Restore() { at::set_num_threads(n); }
  } restore{threads_before};

  auto params = model->parameters();
  const std::size_t n = params.size();
  std::vector<std::size_t> numels, offsets;
  std::size_t total = 0;
  for (const auto& p : params) {
    offsets.push_back(total);
    numels.push_back(static_cast<std::size_t>(p.numel()));
    total += numels.back();
  }
  // Try the feeds in turn; a model that takes neither is refused with the reason.
  Feed feed;
  std::string why;
  for (auto make : {&image_feed, &token_feed}) {
    try {
      Feed f = make(o.batch);
      model->zero_grad();
      f.loss(model->forward(f.input)).backward();
      feed = f;
      why.clear();
      break;
    } catch (const std::exception& e) {
      why = e.what();
    }
  }
  if (!feed.input.defined())
    FERRY_THROW(InvalidArgument, "model '", name, "' cannot be profiled on image batches [B,1,28,28] or token batches [B,",
                kTokenContext, "]: ", why.substr(0, 200), "; give a profile file with --model FILE.json instead");

  // Timestamps: forward reaches each tensor's layer (the layer gate), backward completes each
  // gradient (a hook per tensor).
  std::vector<double> fwd_at(n, -1), bwd_at(n, -1);
  model->set_layer_gate([&](std::size_t first, std::size_t count) {
    const double t = now_s();
    for (std::size_t i = first; i < first + count && i < n; ++i)
      if (fwd_at[i] < 0) fwd_at[i] = t;
  });
  std::vector<std::pair<at::Tensor, unsigned>> hooks;
  for (std::size_t i = 0; i < n; ++i)
    hooks.emplace_back(params[i], params[i].register_hook([&bwd_at, i](const at::Tensor&) { bwd_at[i] = now_s(); }));

  ps::SgdOptimizer opt(total, ps::SgdOptions{0.01f, 0.9f, 0.0f, 1.0f});
  std::vector<float> weights(total, 0.0f), grads(total, 0.0f);
  std::vector<double> fwd, bwd, upd;
  std::vector<std::vector<double>> fwd_frac(n), bwd_frac(n);
  const int timed = o.rounds * o.iterations;
  for (int it = 0; it < o.warmup + timed; ++it) {
    std::fill(fwd_at.begin(), fwd_at.end(), -1.0);
    std::fill(bwd_at.begin(), bwd_at.end(), -1.0);
    const double t0 = now_s();
    model->zero_grad();
    auto loss = feed.loss(model->forward(feed.input));
    const double t1 = now_s();
    loss.backward();
    const double t2 = now_s();
    // What a worker does with the gradient besides communicating: gather it into the flat
    // buffer, check it is finite, step the optimizer (ps::SgdOptimizer, as the strategies do).
    bool finite = true;
    for (std::size_t i = 0; i < n; ++i) {
      at::Tensor g = params[i].grad().contiguous();
      std::copy_n(g.data_ptr<float>(), numels[i], grads.begin() + static_cast<std::ptrdiff_t>(offsets[i]));
    }
    for (float g : grads) finite = finite && std::isfinite(g);
    if (finite) opt.step(weights, grads);
    const double t3 = now_s();
    if (it < o.warmup) continue;
    fwd.push_back(t1 - t0);
    bwd.push_back(t2 - t1);
    upd.push_back(t3 - t2);
    for (std::size_t i = 0; i < n; ++i) {
      fwd_frac[i].push_back(fwd_at[i] < 0 ? static_cast<double>(i) / n : std::clamp((fwd_at[i] - t0) / (t1 - t0), 0.0, 1.0));
      bwd_frac[i].push_back(bwd_at[i] < 0 ? 1.0 : std::clamp((bwd_at[i] - t1) / (t2 - t1), 0.0, 1.0));
    }
  }
  for (auto& [p, h] : hooks) p.remove_hook(h);
  model->set_layer_gate({});

  // The device's sustained rate, for projecting these times onto other devices: a one-thread
  // 256^3 GEMM, the median of 20.
  std::vector<double> gemm;
  {
    const auto a = torch::randn({256, 256}), b = torch::randn({256, 256});
    for (int r = 0; r < 23; ++r) {
      const double g0 = now_s();
      auto c = torch::mm(a, b);
      (void)c.data_ptr<float>();
      if (r >= 3) gemm.push_back(now_s() - g0);
    }
  }
  // Each round's fastest pass (other processes only ever add time), then the median over the
  // rounds; the rounds' spread of the whole iteration is the profile's own noise.
  auto round_fastest = [&](const std::vector<double>& v) {
    std::vector<double> out;
    for (int r = 0; r < o.rounds; ++r)
      out.push_back(*std::min_element(v.begin() + r * o.iterations, v.begin() + (r + 1) * o.iterations));
    return out;
  };
  const auto f = round_fastest(fwd), b = round_fastest(bwd), u = round_fastest(upd);
  std::vector<double> whole;
  for (int r = 0; r < o.rounds; ++r) whole.push_back(f[r] + b[r] + u[r]);
  const double mid = median(whole);
  ModelProfile prof;
  prof.device_tflops = 2.0 * 256 * 256 * 256 / std::max(fastest(gemm), 1e-9) / 1e12;
  prof.name = name;
  prof.device = "local";
  prof.batch = o.batch;
  prof.forward_s = median(f);
  prof.backward_s = median(b);
  prof.update_s = median(u);
  prof.compute_noise = mid > 0 ? (*std::max_element(whole.begin(), whole.end()) - *std::min_element(whole.begin(), whole.end())) / mid : 0.0;
  prof.source = "measured here by ferry advise's profile run (" + std::to_string(o.rounds) + " rounds of " +
                std::to_string(o.iterations) + " iterations, one libtorch thread, median over rounds of each round's fastest)";
  const auto names = model->parameter_names();
  for (std::size_t i = 0; i < n; ++i)
    prof.tensors.push_back({i < names.size() ? names[i] : "tensor" + std::to_string(i), numels[i],
                            median(fwd_frac[i]), median(bwd_frac[i]),
                            std::vector<std::int64_t>(params[i].sizes().begin(), params[i].sizes().end())});
  validate(prof, "profile of " + name);
  return prof;
}

}  // namespace ferry::advise
