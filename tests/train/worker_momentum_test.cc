// Momentum with error-feedback codecs (train/worker_momentum.h): each mechanism against its
// published update rule, written out independently here; the identity codec through the
// mechanism is plain S-SGD with momentum exactly; error feedback's invariant still holds; the
// servers and the allreduce step apply the decoded velocity without momentum of their own; CD-SGD
// pushes through the same mechanism; twobit units=mxnet inside training.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <numeric>
#include <random>

#include "comm/local/local_communicator.h"
#include "compress/codec_registry.h"
#include "compress/dgc_codec.h"
#include "core/error.h"
#include "train/data/synthetic_dataset.h"
#include "train/flat_params.h"
#include "train/ps_setup.h"
#include "train/strategy.h"
#include "train/train_options.h"
#include "train/worker_momentum.h"
#include "local_training.h"

namespace ferry::train {
namespace {

using compress::TensorInfo;

std::vector<float> decoded(const compress::Codec& c, std::span<const std::byte> payload) {
  std::vector<float> out(c.info().numel);
  c.decode(payload, out);
  return out;
}

// validate(o) throws InvalidArgument whose message holds every one of `needles`.
void expect_refused(const TrainOptions& o, std::initializer_list<const char*> needles) {
  try {
    validate(o);
    ADD_FAILURE() << "--codec " << o.codec << " with --algo " << o.algo << " was accepted";
  } catch (const InvalidArgument& e) {
    for (const char* needle : needles) EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

// --- the split -------------------------------------------------------------------------------

TEST(OptimizerSplit, EachCodecPlacesTheMomentumAsItsEntrySays) {
  const ps::SgdOptions sgd{0.05f, 0.9f, 1e-4f, 1.0f};
  for (const char* spec : {"none", "fp16", "qsgd", "powersgd", "twobit:momentum_at=server"}) {
    const OptimizerSplit s = split_optimizer(compress::canonical_codec_spec(spec), sgd);
    EXPECT_FALSE(s.on_worker) << spec;
    EXPECT_EQ(s.aggregate.momentum, 0.9f) << spec;
    EXPECT_EQ(s.aggregate.weight_decay, 1e-4f) << spec;
  }
  for (const char* spec : {"twobit:threshold=0.01", "onebit", "topk", "randomk", "qsgd:ef=1", "none:ef=1"}) {
    const OptimizerSplit s = split_optimizer(compress::canonical_codec_spec(spec), sgd);
    EXPECT_TRUE(s.on_worker) << spec;
    EXPECT_EQ(s.momentum, 0.9f) << spec;
    EXPECT_EQ(s.weight_decay, 1e-4f) << spec;
    EXPECT_EQ(s.aggregate.momentum, 0.0f) << spec;
    EXPECT_EQ(s.aggregate.weight_decay, 0.0f) << spec;
    EXPECT_EQ(s.aggregate.lr, 0.05f) << spec;
  }
  // DGC keeps the momentum in the codec: the workers add weight decay only.
  const OptimizerSplit dgc = split_optimizer(compress::canonical_codec_spec("dgc"), sgd);
  EXPECT_TRUE(dgc.on_worker);
  EXPECT_EQ(dgc.momentum, 0.0f);
  EXPECT_EQ(dgc.aggregate.momentum, 0.0f);
  // The old recommendation (--momentum 0 with dgc) still means what it meant.
  EXPECT_FALSE(split_optimizer("dgc", ps::SgdOptions{0.05f, 0.0f, 0.0f, 1.0f}).on_worker);
  // Momentum 0 and no weight decay: nothing to move, the aggregate's optimizer as before.
  EXPECT_FALSE(split_optimizer("twobit", ps::SgdOptions{0.2f, 0.0f, 0.0f, 1.0f}).on_worker);
}

// EF21 (ef21=1): the workers hand on increments, the aggregate integrates them with no
// momentum or weight decay of its own; it is on the worker even without momentum (EF21 proper).
TEST(OptimizerSplit, Ef21IntegratesOnTheAggregate) {
  for (const ps::SgdOptions& sgd : {ps::SgdOptions{0.05f, 0.9f, 1e-4f, 1.0f}, ps::SgdOptions{0.2f, 0.0f, 0.0f, 1.0f}}) {
    for (const char* spec : {"randomk:ef21=1", "twobit:threshold=2,units=rms,ef21=1", "none:ef=1,ef21=1"}) {
      const OptimizerSplit s = split_optimizer(compress::canonical_codec_spec(spec), sgd);
      EXPECT_TRUE(s.on_worker && s.increments) << spec;
      EXPECT_FALSE(s.mask) << spec;
      EXPECT_EQ(s.momentum, sgd.momentum) << spec;
      EXPECT_TRUE(s.aggregate.integrate) << spec;
      EXPECT_EQ(s.aggregate.momentum, 0.0f) << spec;
      EXPECT_EQ(s.aggregate.weight_decay, 0.0f) << spec;
    }
    for (const char* spec : {"randomk", "randomk:ef21=0"}) {
      const OptimizerSplit classic = split_optimizer(compress::canonical_codec_spec(spec), sgd);
      EXPECT_FALSE(classic.increments || classic.aggregate.integrate) << spec;
    }
  }
  EXPECT_THROW(ps::SgdOptimizer(4, ps::SgdOptions{0.1f, 0.9f, 0.0f, 1.0f, true}), InvalidArgument);
}

// A server that applies each push as it arrives cannot integrate one mean per round.
TEST(OptimizerSplit, Ef21WithAnAsynchronousServerIsRefusedNamingTheKey) {
  TrainOptions o;
  o.algo = "asgd";
  o.num_servers = 1;
  o.codec = "randomk:ratio=0.05,ef21=1";
  expect_refused(o, {"drop ef21=1", "asgd"});
  o.codec = "randomk:ratio=0.05";
  EXPECT_NO_THROW(validate(o));
  o.algo = "ssgd";
  o.topology = "ps";
  o.codec = "randomk:ratio=0.05,ef21=1";
  EXPECT_NO_THROW(validate(o));
}

TEST(OptimizerSplit, DgcWithAnotherMomentumIsRefusedNamingTheFlag) {
  TrainOptions o;
  o.codec = "dgc:momentum=0.9";
  o.momentum = 0.5f;
  expect_refused(o, {"--momentum", "momentum_at=server"});
  o.codec = "dgc:momentum=0.9,momentum_at=server";
  EXPECT_NO_THROW(validate(o));
  o.codec = "dgc:momentum=0.5";
  EXPECT_NO_THROW(validate(o));
}

// --- each mechanism against its published rule, hand-checked -----------------------------------

// Worker momentum with error feedback for a quantiser (Zheng, Huang, Kwok, NeurIPS 2019):
//   u <- m u + g;  p = u + e;  q = Q(p);  e = p - q.  With m = 1/2 and 2-bit t = 1/2, by hand:
//   step 1: g = (3/4, -1/4, 1/8, 0):  u = g, p = u,            q = (1/2, 0, 0, 0),     e = (1/4, -1/4, 1/8, 0)
//   step 2: g = (1/4, -1/2, 1/4, 1):  u = (5/8, -5/8, 5/16, 1), p = (7/8, -7/8, 7/16, 1),
//                                     q = (1/2, -1/2, 0, 1/2),  e = (3/8, -3/8, 7/16, 1/2)
TEST(WorkerMomentumRule, TwobitIsErrorFeedbackOnTheVelocity) {
  OptimizerSplit split = split_optimizer("twobit:threshold=0.5", ps::SgdOptions{0.1f, 0.5f, 0.0f, 1.0f});
  ASSERT_TRUE(split.on_worker);
  WorkerMomentum m(4, split);
  auto codec = compress::make_codec("twobit:threshold=0.5", TensorInfo{.numel = 4});
  std::vector<std::byte> payload;
  std::vector<float> g{0.75f, -0.25f, 0.125f, 0.0f};
  m.apply(g, {});
  codec->encode(g, payload);
  m.mask(0, 4, payload);
  EXPECT_EQ(decoded(*codec, payload), (std::vector<float>{0.5f, 0, 0, 0}));
  EXPECT_EQ(std::vector<float>(codec->residual().begin(), codec->residual().end()),
            (std::vector<float>{0.25f, -0.25f, 0.125f, 0}));
  g = {0.25f, -0.5f, 0.25f, 1.0f};
  m.apply(g, {});
  EXPECT_EQ(g, (std::vector<float>{0.625f, -0.625f, 0.3125f, 1.0f}));  // the velocity is what is coded
  codec->encode(g, payload);
  m.mask(0, 4, payload);
  EXPECT_EQ(decoded(*codec, payload), (std::vector<float>{0.5f, -0.5f, 0, 0.5f}));
  EXPECT_EQ(std::vector<float>(codec->residual().begin(), codec->residual().end()),
            (std::vector<float>{0.375f, -0.375f, 0.4375f, 0.5f}));
  // No masking for a quantiser: the velocity is untouched by what was sent.
  EXPECT_EQ(std::vector<float>(m.velocity().begin(), m.velocity().end()),
            (std::vector<float>{0.625f, -0.625f, 0.3125f, 1.0f}));
}

// EF21 with momentum (Richtarik et al., NeurIPS 2021; Fatkhullin et al., NeurIPS 2023), one worker,
// top-1 of 4, m = 1/2, and its aggregate with lr = 1/2, by hand:
//   u <- m u + g;  c = C(u - h);  h <- h + c;  w <- w - lr h
//   step 1: g = (1, -1/2, 1/4, 0):   u = (1, -1/2, 1/4, 0),       u - h = u,                  c = (1, 0, 0, 0)
//           h = (1, 0, 0, 0),        w = (-1/2, 0, 0, 0)
//   step 2: g = (0, -1/2, 1/2, 1/4): u = (1/2, -3/4, 5/8, 1/4),   u - h = (-1/2, -3/4, 5/8, 1/4), c = (0, -3/4, 0, 0)
//           h = (1, -3/4, 0, 0),     w = (-1, 3/8, 0, 0)
//   step 3: g = (1/4, 0, 0, 0):      u = (1/2, -3/8, 5/16, 1/8),  u - h = (-1/2, 3/8, 5/16, 1/8), c = (-1/2, 0, 0, 0)
//           h = (1/2, -3/4, 0, 0),   w = (-5/4, 3/4, 0, 0)
// ferry's codec carries the increments of u with its error feedback; its residual is u - h.
TEST(WorkerMomentumRule, Ef21SendsTheCorrectionOfTheVelocityEstimate) {
  const std::string spec = compress::canonical_codec_spec("topk:ratio=0.25,ef21=1");
  OptimizerSplit split = split_optimizer(spec, ps::SgdOptions{0.5f, 0.5f, 0.0f, 1.0f});
  ASSERT_TRUE(split.increments);
  WorkerMomentum m(4, split);
  ps::SgdOptimizer aggregate(4, split.aggregate);
  auto codec = compress::make_codec(spec, TensorInfo{.numel = 4});
  const std::vector<std::vector<float>> g{{1, -0.5f, 0.25f, 0}, {0, -0.5f, 0.5f, 0.25f}, {0.25f, 0, 0, 0}};
  const std::vector<std::vector<float>> u{{1, -0.5f, 0.25f, 0}, {0.5f, -0.75f, 0.625f, 0.25f},
                                          {0.5f, -0.375f, 0.3125f, 0.125f}};
  const std::vector<std::vector<float>> c{{1, 0, 0, 0}, {0, -0.75f, 0, 0}, {-0.5f, 0, 0, 0}};
  const std::vector<std::vector<float>> h{{1, 0, 0, 0}, {1, -0.75f, 0, 0}, {0.5f, -0.75f, 0, 0}};
  const std::vector<std::vector<float>> w{{-0.5f, 0, 0, 0}, {-1, 0.375f, 0, 0}, {-1.25f, 0.75f, 0, 0}};
  std::vector<float> weights(4, 0.0f);
  std::vector<std::byte> payload;
  for (std::size_t t = 0; t < 3; ++t) {
    std::vector<float> x = g[t];
    m.apply(x, {});
    codec->encode(x, payload);
    m.mask(0, 4, payload);
    const auto sent = decoded(*codec, payload);
    EXPECT_EQ(sent, c[t]) << "step " << t + 1;
    EXPECT_EQ(std::vector<float>(m.velocity().begin(), m.velocity().end()), u[t]) << "step " << t + 1;
    std::vector<float> u_minus_h(4);
    for (int i = 0; i < 4; ++i) u_minus_h[i] = u[t][i] - h[t][i];
    EXPECT_EQ(std::vector<float>(codec->residual().begin(), codec->residual().end()), u_minus_h) << "step " << t + 1;
    aggregate.step(weights, sent);
    EXPECT_EQ(weights, w[t]) << "step " << t + 1;
  }
}

// DGC's momentum correction with factor masking (Lin et al., ICLR 2018, Algorithm 1 with
// Sec. 3.2), written out here: u <- m u + g; v <- v + u; send top-k of |v|; v[sent] <- 0;
// u[sent] <- 0. ferry's top-k with WorkerMomentum must send the same and keep the same u and v,
// and so must ferry's own DGC codec.
TEST(WorkerMomentumRule, TopkWithMaskingIsDgcMomentumCorrection) {
  const std::size_t n = 257, k = 13;  // ratio 13/257 -> round(13) = 13
  const float mu = 0.9f;
  const std::string spec = "topk:ratio=" + std::to_string(13.0 / 257.0);
  OptimizerSplit split = split_optimizer(compress::canonical_codec_spec(spec), ps::SgdOptions{0.1f, mu, 0.0f, 1.0f});
  ASSERT_TRUE(split.on_worker);
  ASSERT_TRUE(split.mask);
  WorkerMomentum m(n, split);
  auto topk = compress::make_codec(spec, TensorInfo{.numel = n});
  compress::DgcCodec dgc({.ratio = 13.0 / 257.0, .momentum = mu}, TensorInfo{.numel = n});
  std::vector<float> ref_u(n, 0.0f), ref_v(n, 0.0f);
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<std::byte> payload, dgc_payload;
  for (int step = 0; step < 12; ++step) {
    std::vector<float> g(n);
    for (auto& x : g) x = normal(rng);
    // The reference.
    for (std::size_t i = 0; i < n; ++i) {
      ref_u[i] = mu * ref_u[i] + g[i];
      ref_v[i] = ref_v[i] + ref_u[i];
    }
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return std::abs(ref_v[a]) > std::abs(ref_v[b]); });
    std::vector<float> ref_sent(n, 0.0f);
    for (std::size_t j = 0; j < k; ++j) {
      const std::size_t i = order[j];
      ref_sent[i] = ref_v[i];
      ref_v[i] = 0.0f;
      ref_u[i] = 0.0f;
    }
    // ferry: the worker's velocity through top-k's error feedback, then the mask.
    std::vector<float> x = g;
    dgc.encode(g, dgc_payload);
    m.apply(x, {});
    topk->encode(x, payload);
    m.mask(0, n, payload);
    ASSERT_EQ(decoded(*topk, payload), ref_sent) << "step " << step;
    ASSERT_EQ(decoded(dgc, dgc_payload), ref_sent) << "step " << step;
    ASSERT_EQ(std::vector<float>(topk->residual().begin(), topk->residual().end()), ref_v) << "step " << step;
    ASSERT_EQ(std::vector<float>(m.velocity().begin(), m.velocity().end()), ref_u) << "step " << step;
  }
}

// Error feedback's invariant with the velocity as input: sum_t sent_t + e_T = sum_t u_t, for
// every codec with error feedback whose entry moves the momentum, masked or not.
TEST(WorkerMomentumRule, ErrorFeedbackStillConservesItsInput) {
  const std::size_t n = 1000;
  for (const char* spec : {"twobit:threshold=0.05", "onebit", "topk:ratio=0.02", "randomk:ratio=0.02", "fp16:ef=1",
                           "qsgd:ef=1", "terngrad:ef=1", "none:ef=1", "randomk:ratio=0.02,ef21=1",
                           "twobit:threshold=0.05,ef21=1", "topk:ratio=0.02,ef21=1"}) {
    const std::string canonical = compress::canonical_codec_spec(spec);
    WorkerMomentum m(n, split_optimizer(canonical, ps::SgdOptions{0.1f, 0.9f, 0.0f, 1.0f}));
    auto codec = compress::make_codec(canonical, TensorInfo{.numel = n});
    std::vector<double> in(n, 0.0), sent(n, 0.0);
    std::vector<std::byte> payload;
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 0.1f);
    double scale = 0;
    constexpr int kSteps = 60;
    for (int t = 0; t < kSteps; ++t) {
      std::vector<float> g(n);
      for (auto& x : g) x = normal(rng);
      m.apply(g, {});
      for (std::size_t i = 0; i < n; ++i) in[i] += g[i], scale = std::max(scale, double(std::abs(g[i])));
      codec->encode(g, payload);
      m.mask(0, n, payload);
      const auto d = decoded(*codec, payload);
      for (std::size_t i = 0; i < n; ++i) sent[i] += d[i];
    }
    // Each step's e <- (e + u) - sent rounds twice in fp32, each by at most 2^-24 of a value no
    // larger than everything put in so far (|e + u| <= kSteps * max|u|); the sums here are in
    // double. Over kSteps steps: 2 * kSteps^2 * 2^-24 * max|u|, doubled for the decode's rounding.
    const double tol = 4.0 * kSteps * kSteps * std::ldexp(1.0, -24) * scale;
    double worst = 0;
    for (std::size_t i = 0; i < n; ++i) worst = std::max(worst, std::abs(sent[i] + codec->residual()[i] - in[i]));
    EXPECT_LE(worst, tol) << spec;
    if (!compress::codec_momentum(canonical).increments) continue;
    // EF21: the inputs are the velocity's increments, so they sum to the velocity (each increment
    // rounds once more, by 2^-24 of a value within the same bound), and the residual is u - h.
    worst = 0;
    for (std::size_t i = 0; i < n; ++i) worst = std::max(worst, std::abs(in[i] - m.velocity()[i]));
    EXPECT_LE(worst, tol) << spec << ": the increments do not sum to the velocity";
  }
}

// --- the identity codec through the mechanism is plain S-SGD with momentum, exactly -----------

// Drives S-SGD over hand-set gradients: g_i(t) = w/4 + c_i(t), with c dyadic, learning rate 1/2,
// momentum 1/2, weight decay 1/8 and four workers (rescale 1/4): every product is by a power of two
// and the few steps keep every sum within float's 24 bits, so any order of the same operations
// gives the same floats, and the independent double reference below must match exactly.
std::vector<float> dyadic_ssgd(Topology topology, const std::string& codec, int steps) {
  register_builtin_strategies();
  const int workers = 4, servers = topology == Topology::kParameterServer ? 1 : 0;
  StrategyOptions so{topology, WorldLayout{workers, servers}, ps::SgdOptions{0.5f, 0.5f, 0.125f, 1.0f}, codec};
  std::vector<float> result;
  std::mutex mu;
  const std::vector<std::size_t> numels{6, 3};
  comm::run_local_ranks(workers + servers, [&](comm::Communicator& c) {
    if (so.world.is_server(c.rank())) {
      run_parameter_server(c, so.world, numels, ps::ServerMode::kSync, so.sgd, so.codec, {{2, 3}, {3}});
      return;
    }
    std::vector<at::Tensor> p{torch::tensor({1.0f, -1.0f, 0.5f, 2.0f, 0.0f, -0.25f}).reshape({2, 3}),
                              torch::tensor({0.75f, 0.0f, -1.5f})};
    FlatParams params(p);
    auto strategy = strategy_info("ssgd").make(StrategyContext{&c, so});
    strategy->setup(params);
    for (int t = 0; t < steps; ++t) {
      auto g = params.grads();
      auto w = params.weights();
      for (std::size_t i = 0; i < g.size(); ++i)
        g[i] = 0.25f * w[i] + std::ldexp(static_cast<float>((c.rank() + 1) * (static_cast<int>(i) - 4) + t), -3);
      strategy->step(params, t);
    }
    strategy->finish(params);
    if (c.rank() == 0) {
      std::lock_guard lock(mu);
      result.assign(params.weights().begin(), params.weights().end());
    }
  });
  return result;
}

std::vector<double> dyadic_reference(int steps) {
  std::vector<double> w{1.0, -1.0, 0.5, 2.0, 0.0, -0.25, 0.75, 0.0, -1.5}, v(w.size(), 0.0);
  for (int t = 0; t < steps; ++t)
    for (std::size_t i = 0; i < w.size(); ++i) {
      double mean = 0;
      for (int r = 0; r < 4; ++r) mean += 0.25 * w[i] + std::ldexp((r + 1) * (static_cast<int>(i) - 4) + t, -3);
      mean /= 4;
      v[i] = 0.5 * v[i] + mean + 0.125 * w[i];  // PyTorch's form: v <- m v + g + wd w; w <- w - lr v
      w[i] -= 0.5 * v[i];
    }
  return w;
}

TEST(WorkerMomentumSsgd, IdentityCodecThroughTheMechanismIsPlainMomentumSgdExactly) {
  constexpr int kSteps = 5;
  const std::vector<double> ref = dyadic_reference(kSteps);
  for (Topology topology : {Topology::kAllreduce, Topology::kParameterServer}) {
    const auto plain = dyadic_ssgd(topology, "none", kSteps);             // the optimizer's momentum
    const auto worker = dyadic_ssgd(topology, "none:ef=1", kSteps);       // the workers' velocity
    const auto server = dyadic_ssgd(topology, "none:ef=1,momentum_at=server", kSteps);
    const auto ef21 = dyadic_ssgd(topology, "none:ef=1,ef21=1", kSteps);  // increments, integrated
    ASSERT_EQ(plain.size(), ref.size());
    for (std::size_t i = 0; i < ref.size(); ++i) {
      ASSERT_EQ(static_cast<double>(static_cast<float>(ref[i])), ref[i]) << "the reference left float at " << i;
      EXPECT_EQ(plain[i], static_cast<float>(ref[i])) << topology_name(topology) << " " << i;
      EXPECT_EQ(worker[i], static_cast<float>(ref[i])) << topology_name(topology) << " " << i;
      EXPECT_EQ(server[i], static_cast<float>(ref[i])) << topology_name(topology) << " " << i;
      EXPECT_EQ(ef21[i], static_cast<float>(ref[i])) << topology_name(topology) << " " << i;
    }
  }
}

// --- in training ------------------------------------------------------------------------------


std::vector<float> train(const std::string& algo, Topology topology, int servers, const std::string& codec,
                         int steps, float momentum = 0.9f, std::int64_t batch = 0) {
  StrategyOptions so{topology, WorldLayout{4, servers}, ps::SgdOptions{0.05f, momentum, 0.0f, 1.0f}, codec};
  so.batch = batch;
  so.algo = testing::with_keys(algo, {{"warmup_steps", "2"}});
  std::vector<float> w;
  std::mutex mu;
  testing::run_strategy_locally(algo, so, testing::small_dataset(), 16, steps,
                                [&](comm::Communicator& c, int step, FlatParams& params, Strategy&, Model&) {
                                  if (step == testing::kAfterFinish && c.rank() == 0) {
                                    std::lock_guard lock(mu);
                                    w.assign(params.weights().begin(), params.weights().end());
                                  }
                                });
  return w;
}

// The server applies the decoded velocity without momentum: with an identity codec the PS and
// allreduce runs and the optimizer's own momentum follow each other to float rounding, for S-SGD
// and for CD-SGD, whose fp32 warm-up and correction pushes carry the velocity too.
TEST(WorkerMomentumTraining, IdentityCodecFollowsTheOptimizersMomentum) {
  const auto plain = train("ssgd", Topology::kParameterServer, 1, "none", 12);
  const auto worker = train("ssgd", Topology::kParameterServer, 1, "none:ef=1", 12);
  const auto allreduce = train("ssgd", Topology::kAllreduce, 0, "none:ef=1", 12);
  EXPECT_LT(testing::max_abs_diff(plain, worker), 1e-5);
  EXPECT_LT(testing::max_abs_diff(plain, allreduce), 1e-5);
  EXPECT_LT(testing::max_abs_diff(plain, train("ssgd", Topology::kParameterServer, 1, "none:ef=1,ef21=1", 12)), 1e-5);
  EXPECT_LT(testing::max_abs_diff(plain, train("ssgd", Topology::kAllreduce, 0, "none:ef=1,ef21=1", 12)), 1e-5);
  const auto cd_plain = train("cdsgd", Topology::kParameterServer, 1, "none:ef=1,momentum_at=server", 12);
  const auto cd_worker = train("cdsgd", Topology::kParameterServer, 1, "none:ef=1", 12);
  EXPECT_GT(testing::max_abs_diff(cd_plain, plain), 1e-4) << "CD-SGD is not S-SGD";
  EXPECT_LT(testing::max_abs_diff(cd_plain, cd_worker), 1e-5);
  EXPECT_LT(testing::max_abs_diff(cd_plain, train("cdsgd", Topology::kParameterServer, 1, "none:ef=1,ef21=1", 12)), 1e-5);
}

// EF21 with a lossy codec is its own run (not the classic one), and the same on both topologies.
TEST(WorkerMomentumTraining, Ef21IsTheSameOnBothTopologies) {
  const auto ef21 = train("ssgd", Topology::kParameterServer, 1, "topk:ratio=0.05,ef21=1", 10);
  EXPECT_GT(testing::max_abs_diff(ef21, train("ssgd", Topology::kParameterServer, 1, "topk:ratio=0.05", 10)), 1e-6);
  EXPECT_LT(testing::max_abs_diff(ef21, train("ssgd", Topology::kAllreduce, 0, "topk:ratio=0.05,ef21=1", 10)), 1e-5);
}

// With a lossy codec the placement changes the run (it is not silently the old path), and the
// old behaviour is one key away.
TEST(WorkerMomentumTraining, MomentumAtServerIsTheOldPath) {
  const auto worker = train("cdsgd", Topology::kParameterServer, 1, "twobit:threshold=0.01", 10);
  const auto server = train("cdsgd", Topology::kParameterServer, 1, "twobit:threshold=0.01,momentum_at=server", 10);
  EXPECT_GT(testing::max_abs_diff(worker, server), 1e-6);
  const auto ps = train("ssgd", Topology::kParameterServer, 1, "topk:ratio=0.05", 10);
  const auto ar = train("ssgd", Topology::kAllreduce, 0, "topk:ratio=0.05", 10);
  EXPECT_LT(testing::max_abs_diff(ps, ar), 1e-5);  // masking acts the same on both topologies
}

// units=mxnet: MXNet's threshold on the batch sum is threshold / B on ferry's batch means, bit for
// bit through training (B = 16 here).
TEST(WorkerMomentumTraining, MxnetUnitsAreThresholdOverTheBatch) {
  const auto mx = train("ssgd", Topology::kParameterServer, 1, "twobit:threshold=0.5,units=mxnet", 6, 0.9f, 16);
  const auto abs = train("ssgd", Topology::kParameterServer, 1, "twobit:threshold=0.03125", 6, 0.9f, 16);
  EXPECT_EQ(mx, abs);
  EXPECT_GT(testing::max_abs_diff(mx, train("ssgd", Topology::kParameterServer, 1, "twobit:threshold=0.5", 6)), 1e-4)
      << "units=mxnet changed nothing";
}

}  // namespace
}  // namespace ferry::train
