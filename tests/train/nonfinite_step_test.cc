// A NaN or Inf in one worker's gradient (docs/reliability.md, "Non-finite gradients"): every
// algorithm keeps all ranks in step, and synchronous ones skip the step for everybody, so one bad
// worker has exactly the effect of all workers being bad at that step. Threads as ranks, the mlp
// on synthetic data; momentum 0.9, so an optimizer step taken with a zero gradient would still
// move the weights and be caught.
#include <gtest/gtest.h>

#include <cmath>
#include <mutex>
#include <string>
#include <vector>

#include "core/finite.h"
#include "train/data/synthetic_dataset.h"
#include "train/strategy.h"
#include "local_training.h"

namespace ferry::train {
namespace {

constexpr int kStepsPerRun = 7;
constexpr int kBadStep = 3;
constexpr std::int64_t kBatchPerWorker = 16;


// What one bad worker at step kBadStep must give.
enum class Expect {
  kSameAsAllBad,   // the run equals, step for step, one in which every worker is bad then
  kStepSkipped,    // nobody's weights change at the bad step; healthy workers' codec residuals
                   // keep what they did not send of it, so later steps differ from all-bad
  kConsistent,     // asynchronous or local updates: finite weights, the same final model
};

struct Case {
  std::string name;
  std::string algo;
  Topology topology;
  WorldLayout world;
  std::string codec = "none";
  std::int64_t warmup = 0;     // delayed algorithms: S-SGD steps first
  std::int64_t post_local = 0;  // localsgd: S-SGD steps first
  Expect expect = Expect::kSameAsAllBad;
};

struct Weights {
  std::vector<std::vector<std::vector<float>>> per_step;  // [rank][step] weights after the step
  std::vector<std::vector<float>> final;                  // [rank] weights after finish()
};

enum class Bad { kNobody, kWorker1, kEverybody };

Weights run(const Case& c, Bad bad) {
  StrategyOptions so{c.topology, c.world, ps::SgdOptions{0.05f, 0.9f, 0.0f, 1.0f}};
  so.codec = c.codec;
  so.algo = testing::with_keys(c.algo, {{"warmup_steps", std::to_string(c.warmup)}});
  if (c.algo == "localsgd") so.algo = "localsgd:sync_every=2,post_local=" + std::to_string(c.post_local);
  Weights r;
  r.per_step.resize(c.world.num_workers);
  r.final.resize(c.world.num_workers);
  std::mutex mu;
  testing::run_strategy_locally(
      c.algo, so, testing::small_dataset(), kBatchPerWorker, kStepsPerRun,
      [&](comm::Communicator& comm, int step, FlatParams& params, Strategy&, Model&) {
        std::vector<float> w(params.weights().begin(), params.weights().end());
        std::lock_guard lock(mu);
        if (step >= 0) r.per_step[comm.rank()].push_back(w);
        if (step == testing::kAfterFinish) r.final[comm.rank()] = std::move(w);
      },
      "mlp", {},
      [bad](int rank, int step) {
        return step == kBadStep && (bad == Bad::kEverybody || (bad == Bad::kWorker1 && rank == 1));
      });
  return r;
}

std::vector<Case> cases() {
  const WorldLayout ps{3, 2}, ar{3, 0};
  return {
      {"ssgd_ps", "ssgd", Topology::kParameterServer, ps},
      {"ssgd_ps_twobit", "ssgd", Topology::kParameterServer, ps, "twobit:threshold=0.01", 0, 0, Expect::kStepSkipped},
      {"ssgd_allreduce", "ssgd", Topology::kAllreduce, ar},
      {"ssgd_allreduce_twobit", "ssgd", Topology::kAllreduce, ar, "twobit:threshold=0.01"},
      {"ssgd_allreduce_powersgd", "ssgd", Topology::kAllreduce, ar, "powersgd:rank=2"},
      {"wfbp_allreduce", "wfbp", Topology::kAllreduce, ar},
      {"localsgd_post_local", "localsgd", Topology::kAllreduce, ar, "none", 0, 5},
      {"odsgd_in_warmup", "odsgd", Topology::kParameterServer, ps, "none", 5},
      // A codec with error feedback moves the momentum to the workers (worker_momentum.h): on a
      // parameter server a healthy worker's velocity keeps the skipped round's gradient, as its
      // residual does, so only the skipped step itself is checked; with the momentum on the
      // server the warm-up is plain S-SGD again.
      {"cdsgd_in_warmup", "cdsgd", Topology::kParameterServer, ps, "twobit:threshold=0.01", 5, 0, Expect::kStepSkipped},
      {"cdsgd_in_warmup_server_momentum", "cdsgd", Topology::kParameterServer, ps,
       "twobit:threshold=0.01,momentum_at=server", 5},
      // After the warm-up a healthy worker's local step of the bad iteration stands until its
      // next pull, so only the global rounds are skipped: no step-for-step equality.
      {"odsgd", "odsgd", Topology::kParameterServer, ps, "none", 0, 0, Expect::kConsistent},
      {"ssdsgd", "ssdsgd", Topology::kParameterServer, ps, "none", 0, 0, Expect::kConsistent},
      {"cdsgd", "cdsgd", Topology::kParameterServer, ps, "twobit:threshold=0.01", 0, 0, Expect::kConsistent},
      {"localsgd", "localsgd", Topology::kAllreduce, ar, "none", 0, 0, Expect::kConsistent},
      {"asgd", "asgd", Topology::kParameterServer, ps, "none", 0, 0, Expect::kConsistent},
  };
}

class NonFiniteStep : public ::testing::TestWithParam<Case> {};

TEST_P(NonFiniteStep, NobodyHangsAndSynchronousAlgorithmsSkipForEverybody) {
  const Case& c = GetParam();
  const Weights clean = run(c, Bad::kNobody);
  const Weights one = run(c, Bad::kWorker1);
  for (int w = 0; w < c.world.num_workers; ++w) {
    ASSERT_EQ(one.per_step[w].size(), static_cast<std::size_t>(kStepsPerRun)) << "worker " << w;
    EXPECT_TRUE(all_finite(one.final[w])) << "worker " << w << ": the NaN reached the weights";
  }
  EXPECT_NE(one.final[0], clean.final[0]) << "the bad step changed nothing";
  for (int w = 1; w < c.world.num_workers; ++w) EXPECT_EQ(one.final[w], one.final[0]) << "worker " << w;
  if (c.expect == Expect::kConsistent) return;
  // No update at the bad step, not even momentum's: the weights stay those of the step before.
  for (int w = 0; w < c.world.num_workers; ++w)
    EXPECT_EQ(one.per_step[w][kBadStep], one.per_step[w][kBadStep - 1]) << "worker " << w;
  if (c.expect == Expect::kStepSkipped) return;
  const Weights all = run(c, Bad::kEverybody);
  for (int w = 0; w < c.world.num_workers; ++w)
    for (int t = 0; t < kStepsPerRun; ++t) EXPECT_EQ(one.per_step[w][t], all.per_step[w][t]) << "worker " << w << " step " << t;
}

INSTANTIATE_TEST_SUITE_P(Strategies, NonFiniteStep, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace ferry::train
