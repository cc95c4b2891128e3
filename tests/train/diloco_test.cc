// DiLoCo and Streaming DiLoCo against their definitions (train/diloco_strategy.h): the spec's
// keys, the reduction to S-SGD (H = 1, outer SGD of lr 1) within float rounding, Streaming DiLoCo
// with one fragment, no overlap and α = 0 equal to DiLoCo bit for bit, the outer Nesterov step on
// a hand-worked example, and the bytes of an uncompressed run equal to local SGD's.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <map>
#include <mutex>

#include "comm/local/local_communicator.h"
#include "core/error.h"
#include "train/diloco_options.h"
#include "train/diloco_strategy.h"
#include "train/flat_params.h"
#include "train/optimizer_choice.h"
#include "train/strategy.h"
#include "local_training.h"

namespace ferry::train {
namespace {

constexpr std::int64_t kBatch = 16;

struct Trajectory {
  std::vector<float> initial;                       // worker 0's weights after setup()
  std::vector<float> final;                         // worker 0's weights after finish()
  std::map<int, std::vector<float>> grads_step0;    // every worker's gradient of step 0
  std::vector<std::vector<float>> per_step;         // worker 0's weights after every step
  std::uint64_t bytes_sent = 0;                     // worker 0's
};

// `sync_every`: localsgd's period (localsgd:sync_every); `optimizer`: the workers' (--optimizer).
Trajectory run(const std::string& algo, int workers, int steps, ps::SgdOptions sgd, const std::string& codec = "none",
        int sync_every = 4, const std::string& optimizer = "sgd") {
  StrategyOptions so{Topology::kAllreduce, WorldLayout{workers, 0}, sgd};
  so.algo = algo == "localsgd" ? "localsgd:sync_every=" + std::to_string(sync_every) : algo;
  so.codec = codec;
  so.optimizer = canonical_optimizer(optimizer);
  Trajectory r;
  std::mutex mu;
  testing::run_strategy_locally(
      algo, so, testing::small_dataset(), kBatch, steps,
      [&](comm::Communicator& c, int step, FlatParams& params, Strategy&, Model&) {
        std::vector<float> w(params.weights().begin(), params.weights().end());
        std::lock_guard lock(mu);
        if (step == 0) r.grads_step0[c.rank()] = std::vector<float>(params.grads().begin(), params.grads().end());
        if (c.rank() != 0) return;
        if (step == testing::kAfterSetup) r.initial = w;
        if (step >= 0) r.per_step.push_back(w);
        if (step == testing::kAfterFinish) {
          r.final = w;
          r.bytes_sent = c.counters().bytes_sent;
        }
      });
  return r;
}

TEST(DilocoSpec, DefaultsAreThePapersAndUnknownKeysAreRefused) {
  register_builtin_strategies();
  const std::string d = canonical_algo("diloco");
  for (const char* key :
       {"inner_steps=50", "outer_lr=0.7", "outer_momentum=0.9", "nesterov=", "warm_start_steps=0", "inner_lr_scale=1"})
    EXPECT_NE(d.find(key), std::string::npos) << d;
  EXPECT_EQ(canonical_algo(d), d);  // canonical is a fixed point
  // The inner optimizer is the run's --optimizer (AdamW unless another is given), no key of the spec.
  EXPECT_EQ(strategy_info("diloco").default_optimizer, "adamw");
  EXPECT_EQ(strategy_info("streaming-diloco").default_optimizer, "adamw");
  const std::string s = canonical_algo("streaming-diloco:inner_steps=8");
  for (const char* key : {"fragments=4", "overlap=1", "alpha=0.5"}) EXPECT_NE(s.find(key), std::string::npos) << s;
  EXPECT_EQ(canonical_algo("ssgd"), "ssgd");

  auto message = [](const std::string& spec) {
    try {
      canonical_algo(spec);
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("diloco:fragments=2").find("unknown option 'fragments'"), std::string::npos);  // streaming only
  EXPECT_NE(message("diloco:beta1=0.8").find("unknown option 'beta1'"), std::string::npos);  // adamw only
  EXPECT_NE(message("ssgd:delay=4").find("unknown option 'delay'"), std::string::npos);
  EXPECT_NE(message("diloco:inner_steps=0").find("inner_steps"), std::string::npos);
  EXPECT_NE(message("diloco:outer_momentum=1").find("outer_momentum"), std::string::npos);
  EXPECT_NE(message("diloco:inner=adamw").find("unknown option 'inner'"), std::string::npos);
  EXPECT_NE(message("diloco:warm_start_steps=-1").find("warm_start_steps"), std::string::npos);
  EXPECT_NE(message("diloco:inner_lr_scale=0").find("inner_lr_scale"), std::string::npos);
  EXPECT_NE(message("streaming-diloco:inner_steps=4,overlap=4").find("overlap"), std::string::npos);
  EXPECT_NE(message("streaming-diloco:alpha=2").find("alpha"), std::string::npos);
  EXPECT_NE(message("dilocoo").find("unknown --algo 'dilocoo'"), std::string::npos);
}

// H = 1, inner SGD without momentum, outer SGD of lr 1 without momentum: the new global weights
// are mean_i(w − η g_i), S-SGD's are w − η·(Σ g_i)/N: the same number computed in another order.
// Each path is within its rounding errors of the exact value (u = 2^-24 per operation):
//   S-SGD:  the ring sum of N terms (N − 1 additions), ×1/N, ×η, w − ·:
//           ≤ u·(|w_S| + (N + 1)·η·G/N),                   G = Σ_i |g_i|
//   DiLoCo: θ_i = w − η g_i (2 roundings), Δ_i = w − θ_i (1), the sum (N − 1), ×1/N, w − ·:
//           ≤ u·(|w_D| + |w| + (N + 4)·η·G/N)               (|θ_i| ≤ |w| + η|g_i|)
// so |w_D − w_S| ≤ u·(|w_S| + |w_D| + |w| + (2N + 5)·η·G/N), to first order in u (the factor
// 1.001 covers the higher orders).
// Fragments are consecutive whole tensors, each cut once the running size passes its share, at
// least one tensor each; more fragments than tensors are refused.
TEST(DilocoSpec, FragmentsAreConsecutiveTensorsCutAtTheirShare) {
  EXPECT_EQ(fragment_cuts({100, 100, 100, 100}, 2, "streaming-diloco"), (std::vector<std::size_t>{0, 2, 4}));
  EXPECT_EQ(fragment_cuts({100, 100, 100, 100}, 4, "streaming-diloco"), (std::vector<std::size_t>{0, 1, 2, 3, 4}));
  // One dominant tensor: the first fragment takes it, the rest get one tensor each.
  EXPECT_EQ(fragment_cuts({10, 1000, 10, 10}, 2, "streaming-diloco"), (std::vector<std::size_t>{0, 2, 4}));
  EXPECT_EQ(fragment_cuts({1000, 10, 10, 10}, 3, "streaming-diloco"), (std::vector<std::size_t>{0, 1, 2, 4}));
  EXPECT_EQ(fragment_cuts({5, 5, 5}, 1, "streaming-diloco"), (std::vector<std::size_t>{0, 3}));
  try {
    fragment_cuts({5, 5}, 3, "streaming-diloco");
    ADD_FAILURE() << "3 fragments of 2 tensors accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("fragments (3) must be at most the model's 2 tensors"), std::string::npos);
  }
}

TEST(Diloco, OneInnerStepWithOuterSgdOfLrOneIsSsgd) {
  const int n = 4;
  const float lr = 0.05f;
  const ps::SgdOptions sgd{lr, 0.0f, 0.0f, 1.0f};
  Trajectory s = run("ssgd", n, 1, sgd);
  Trajectory d = run("diloco:inner_steps=1,outer_lr=1,outer_momentum=0", n, 1, sgd);
  ASSERT_EQ(s.initial, d.initial);
  ASSERT_EQ(d.grads_step0.size(), static_cast<std::size_t>(n));
  const double u = std::ldexp(1.0, -24);
  std::size_t differ = 0, outside = 0;
  for (std::size_t i = 0; i < s.final.size(); ++i) {
    double g = 0;
    for (const auto& [rank, grad] : d.grads_step0) g += std::abs(grad[i]);
    const double bound = 1.001 * u *
                         (std::abs(s.final[i]) + std::abs(d.final[i]) + std::abs(d.initial[i]) +
                          (2 * n + 5) * lr * g / n);
    differ += s.final[i] != d.final[i];
    outside += std::abs(double(s.final[i]) - d.final[i]) > bound;
  }
  EXPECT_EQ(outside, 0u) << "of " << s.final.size() << " weights (" << differ << " differ at all)";
  EXPECT_GT(d.final.size(), 0u);
  EXPECT_NE(d.final, d.initial);
}

// One fragment, no overlap, α = 0: Streaming DiLoCo is DiLoCo, bit for bit (with momentum, the
// outer Nesterov step and AdamW inside).
TEST(Diloco, StreamingWithOneFragmentNoOverlapAndAlphaZeroIsDiloco) {
  const ps::SgdOptions sgd{0.05f, 0.9f, 1e-4f, 1.0f};
  for (const std::string inner : {"sgd", "adamw"}) {
    const std::string keys = "inner_steps=3";
    Trajectory d = run("diloco:" + keys, 4, 10, sgd, "none", 4, inner);
    Trajectory s = run("streaming-diloco:" + keys + ",fragments=1,overlap=0,alpha=0", 4, 10, sgd, "none", 4, inner);
    ASSERT_EQ(d.per_step.size(), 10u);
    EXPECT_EQ(d.per_step, s.per_step) << inner;
    EXPECT_EQ(d.final, s.final) << inner;
    EXPECT_NE(d.final, d.initial) << inner;
  }
  // and they differ from it once the fragments are staggered, mixed or overlapped
  Trajectory d = run("diloco:inner_steps=4", 4, 10, sgd);
  for (const std::string keys : {"fragments=2,overlap=0,alpha=0", "fragments=1,overlap=1,alpha=0",
                                 "fragments=1,overlap=0,alpha=0.5"}) {
    Trajectory s = run("streaming-diloco:inner_steps=4," + keys, 4, 10, sgd);
    EXPECT_NE(d.final, s.final) << keys;
  }
}

// Between synchronisations the workers do not talk: an uncompressed DiLoCo run moves exactly the
// bytes of local SGD averaging every H steps (one allreduce of the whole model each time).
TEST(Diloco, UncompressedBytesAreLocalSgdsWithTheSamePeriod) {
  const ps::SgdOptions sgd{0.05f, 0.9f, 0.0f, 1.0f};
  Trajectory d = run("diloco:inner_steps=3", 4, 12, sgd);
  Trajectory local3 = run("localsgd", 4, 12, sgd, "none", /*sync_every=*/3);
  Trajectory local4 = run("localsgd", 4, 12, sgd, "none", /*sync_every=*/4);
  EXPECT_GT(d.bytes_sent, 0u);
  EXPECT_EQ(d.bytes_sent, local3.bytes_sent);
  EXPECT_NE(d.bytes_sent, local4.bytes_sent);  // another period moves other bytes: the check can fail
}

// Warm start: the first N iterations are S-SGD with the inner optimizer, bit for bit, for SGD and
// AdamW (S-SGD rescales the gradient sum inside its optimizer, DiLoCo's warm start before it: the
// same product of the same two floats).
TEST(DilocoWarmStart, IsSsgdBitForBitForItsSteps) {
  const ps::SgdOptions sgd{0.05f, 0.9f, 1e-4f, 1.0f};
  for (const std::string optimizer : {"sgd", "adamw"}) {
    for (const int workers : {1, 3, 4}) {
      Trajectory s = run("ssgd", workers, 5, sgd, "none", 4, optimizer);
      Trajectory d = run("diloco:inner_steps=2,warm_start_steps=5", workers, 9, sgd, "none", 4, optimizer);
      ASSERT_EQ(d.per_step.size(), 9u);
      for (int t = 0; t < 5; ++t) EXPECT_EQ(d.per_step[t], s.per_step[t]) << optimizer << " step " << t;
      EXPECT_NE(d.per_step[8], s.per_step[4]) << optimizer;  // then DiLoCo moves on
    }
  }
  // A run that ends within its warm start ends on S-SGD's weights.
  Trajectory s = run("ssgd", 4, 3, sgd);
  Trajectory d = run("diloco:inner_steps=2,warm_start_steps=5", 4, 3, sgd);
  EXPECT_EQ(d.final, s.final);
}

// After the warm start, DiLoCo's definition, replayed here from each worker's own gradients: two
// workers (so the allreduce's sum is the same float whatever its order), inner SGD with momentum
// and weight decay continuing S-SGD's velocity, every H inner steps the outer Nesterov step on
// Δ = (1/N) Σ_i (θ − θ_i) from θ = the weights after the warm start; every worker's weights equal
// the replay's bit for bit at every step; with inner_lr_scale, the inner steps at that multiple of
// the learning rate (the warm start's unchanged).
void expect_warm_start_then_diloco(const std::string& scale_key, float scale) {
  const int n = 2, warm = 3, h = 2, steps = 10;
  const float outer_lr = 0.7f, mu = 0.9f;
  const ps::SgdOptions sgd{0.05f, 0.9f, 1e-4f, 1.0f};
  StrategyOptions so{Topology::kAllreduce, WorldLayout{n, 0}, sgd};
  so.algo = "diloco:inner_steps=" + std::to_string(h) + ",warm_start_steps=" + std::to_string(warm) + scale_key;
  std::vector<std::vector<std::vector<float>>> w(n, std::vector<std::vector<float>>(steps));
  std::vector<std::vector<std::vector<float>>> g = w;  // the gradient each worker stepped with
  std::vector<float> initial;
  std::mutex mu_lock;
  testing::run_strategy_locally("diloco", so, testing::small_dataset(), kBatch, steps,
                                [&](comm::Communicator& c, int step, FlatParams& params, Strategy&, Model&) {
                                  std::lock_guard lock(mu_lock);
                                  if (step == testing::kAfterSetup && c.rank() == 0)
                                    initial.assign(params.weights().begin(), params.weights().end());
                                  if (step < 0) return;
                                  w[c.rank()][step].assign(params.weights().begin(), params.weights().end());
                                  g[c.rank()][step].assign(params.grads().begin(), params.grads().end());
                                });
  const std::size_t size = initial.size();
  ps::SgdOptimizer warm_opt(size, sgd);  // S-SGD's: the warm start's gradient is the mean (in place)
  std::vector<float> theta = initial;
  for (int t = 0; t < warm; ++t) {
    ASSERT_EQ(g[0][t], g[1][t]) << "step " << t << ": every worker steps with the mean";
    warm_opt.step(theta, g[0][t]);
    ASSERT_EQ(w[0][t], theta) << "step " << t;
    ASSERT_EQ(w[1][t], theta) << "step " << t;
  }
  std::vector<ps::SgdOptimizer> inner(n, warm_opt);  // the velocity carries over
  for (ps::SgdOptimizer& o : inner) o.set_lr(sgd.lr * scale);
  std::vector<std::vector<float>> local(n, theta);
  std::vector<float> velocity(size, 0.0f);
  for (int t = warm; t < steps; ++t) {
    for (int i = 0; i < n; ++i) inner[i].step(local[i], g[i][t]);
    if ((t - warm + 1) % h == 0) {
      for (std::size_t k = 0; k < size; ++k) {
        const float delta = ((theta[k] - local[0][k]) + (theta[k] - local[1][k])) * (1.0f / n);
        velocity[k] = mu * velocity[k] + delta;
        theta[k] -= outer_lr * (delta + mu * velocity[k]);
      }
      local.assign(n, theta);
    }
    for (int i = 0; i < n; ++i) EXPECT_EQ(w[i][t], local[i]) << "worker " << i << " step " << t << scale_key;
  }
  EXPECT_NE(theta, initial);
}

TEST(DilocoWarmStart, ThenFollowsDilocosDefinition) { expect_warm_start_then_diloco("", 1.0f); }

TEST(DilocoWarmStart, ThenFollowsDilocosDefinitionAtAScaledInnerRate) {
  expect_warm_start_then_diloco(",inner_lr_scale=0.5", 0.5f);
}

// The outer Nesterov step on numbers worked by hand (every value a dyadic fraction, so exact):
// two workers, H = 2, outer lr 0.5, momentum 0.5; the caller moves the weights (an external
// inner optimizer), so each outer gradient is known.
//   θ0 = (1, 2). Worker 0 ends at (0.5, 2), worker 1 at (0.75, 1): Δ = (0.375, 0.5),
//   u = Δ, θ1 = θ0 − 0.5·(Δ + 0.5·u) = (0.71875, 1.625).
//   Then worker 0 moves by (−0.25, 0), worker 1 by (0, −0.5): Δ = (0.125, 0.25),
//   u = 0.5·(0.375, 0.5) + Δ = (0.3125, 0.5), θ2 = θ1 − 0.5·(Δ + 0.5·u) = (0.578125, 1.375).
//   Plain momentum instead: θ1 = θ0 − 0.5·u = (0.8125, 1.75), θ2 = θ1 − 0.5·(0.3125, 0.5) = (0.65625, 1.5).
TEST(Diloco, OuterNesterovStepMatchesAHandWorkedExample) {
  register_builtin_strategies();
  for (const bool nesterov : {true, false}) {
    std::vector<std::vector<float>> after(4);
    std::mutex mu;
    comm::run_local_ranks(2, [&](comm::Communicator& c) {
      StrategyOptions so{Topology::kAllreduce, WorldLayout{2, 0}, ps::SgdOptions{}};
      so.algo = std::string("diloco:inner_steps=2,outer_lr=0.5,outer_momentum=0.5,nesterov=") + (nesterov ? "1" : "0");
      so.external_optimizer = true;
      auto t = torch::tensor({1.0f, 2.0f}).requires_grad_();
      FlatParams params({t});
      auto strategy = strategy_info(so.algo).make(StrategyContext{&c, so});
      strategy->setup(params);
      const float moves[2][2][2] = {{{-0.5f, 0.0f}, {-0.25f, 0.0f}}, {{-0.25f, -1.0f}, {0.0f, -0.5f}}};
      for (int outer = 0; outer < 2; ++outer) {
        auto w = params.weights();
        const float start[2] = {w[0], w[1]};
        w[0] = start[0] + moves[c.rank()][outer][0] / 2;  // a first inner step, half way
        w[1] = start[1] + moves[c.rank()][outer][1] / 2;
        strategy->step(params, 2 * outer);
        w[0] = start[0] + moves[c.rank()][outer][0];
        w[1] = start[1] + moves[c.rank()][outer][1];
        strategy->step(params, 2 * outer + 1);
        std::lock_guard lock(mu);
        after[2 * outer + c.rank()] = {w[0], w[1]};
      }
      strategy->finish(params);
    });
    const std::vector<float> theta1 = nesterov ? std::vector<float>{0.71875f, 1.625f} : std::vector<float>{0.8125f, 1.75f};
    const std::vector<float> theta2 = nesterov ? std::vector<float>{0.578125f, 1.375f} : std::vector<float>{0.65625f, 1.5f};
    EXPECT_EQ(after[0], theta1) << "nesterov " << nesterov;
    EXPECT_EQ(after[1], theta1) << "nesterov " << nesterov;
    EXPECT_EQ(after[2], theta2) << "nesterov " << nesterov;
    EXPECT_EQ(after[3], theta2) << "nesterov " << nesterov;
  }
}

// α mixes the local fragment with the new global one after the outer step.
TEST(Diloco, StreamingMixesLocalAndGlobalWeightsWithAlpha) {
  register_builtin_strategies();
  std::vector<std::vector<float>> after(2);
  std::mutex mu;
  comm::run_local_ranks(2, [&](comm::Communicator& c) {
    StrategyOptions so{Topology::kAllreduce, WorldLayout{2, 0}, ps::SgdOptions{}};
    so.algo = "streaming-diloco:inner_steps=1,outer_lr=1,outer_momentum=0,fragments=1,overlap=0,alpha=0.25";
    so.external_optimizer = true;
    auto t = torch::tensor({1.0f, 2.0f}).requires_grad_();
    FlatParams params({t});
    auto strategy = strategy_info(so.algo).make(StrategyContext{&c, so});
    strategy->setup(params);
    auto w = params.weights();
    w[0] = c.rank() == 0 ? 0.0f : 1.0f;  // global after the step: the mean, (0.5, 2)
    strategy->step(params, 0);
    std::lock_guard lock(mu);
    after[c.rank()] = {w[0], w[1]};
  });
  EXPECT_EQ(after[0], (std::vector<float>{0.25f * 0.0f + 0.75f * 0.5f, 2.0f}));
  EXPECT_EQ(after[1], (std::vector<float>{0.25f * 1.0f + 0.75f * 0.5f, 2.0f}));
}

TEST(Diloco, RefusesTheParameterServerAndTooManyFragments) {
  register_builtin_strategies();
  comm::run_local_ranks(1, [&](comm::Communicator& c) {
    StrategyOptions so{Topology::kParameterServer, WorldLayout{1, 1}, ps::SgdOptions{}};
    so.algo = "diloco";
    EXPECT_THROW(strategy_info("diloco").make(StrategyContext{&c, so}), InvalidArgument);
    so.topology = Topology::kAllreduce;
    so.world = WorldLayout{1, 0};
    so.algo = "streaming-diloco:inner_steps=8,fragments=3";
    auto t = torch::tensor({1.0f, 2.0f}).requires_grad_();
    FlatParams params({t});
    auto strategy = strategy_info(so.algo).make(StrategyContext{&c, so});
    try {
      strategy->setup(params);
      ADD_FAILURE() << "3 fragments of one tensor were accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("fragments (3) must be at most the model's 1 tensors"), std::string::npos)
          << e.what();
    }
  });
}

}  // namespace
}  // namespace ferry::train
