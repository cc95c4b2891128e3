// The recipe of docs/architecture.md ("a new algorithm is one file plus one registration line"),
// followed by a test-only strategy: once registered it is listed, the training loop runs it, and
// its capabilities (not its name) decide what validation and `ferry compare` do with it.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <atomic>
#include <cmath>

#include "core/error.h"
#include "train/compare.h"
#include "train/data/synthetic_dataset.h"
#include "train/strategy.h"
#include "train/train_options.h"
#include "local_training.h"

namespace ferry::train {
namespace {

std::atomic<int> g_steps{0};  // steps the dummy took, over every instance

// The "one file": signSGD on each worker, nothing communicated: w -= lr * sign(g).
class SignStepStrategy final : public Strategy {
 public:
  explicit SignStepStrategy(const StrategyContext& c) : lr_(c.options.sgd.lr) {}
  std::string name() const override { return "test-signstep"; }
  void setup(FlatParams&) override {}
  void step(FlatParams& params, std::int64_t) override {
    auto w = params.weights();
    auto g = params.grads();
    for (std::size_t i = 0; i < w.size(); ++i) w[i] -= lr_ * static_cast<float>((g[i] > 0) - (g[i] < 0));
    ++g_steps;
  }
  void skip_step(FlatParams&, std::int64_t) override {}
  void finish(FlatParams&) override {}

 private:
  float lr_;
};

// The "one registration line" (at most once per process: a second add is an InvalidArgument).
void register_dummy() {
  static const bool once = [] {
    register_strategy({.name = "test-signstep", .summary = "test only: local signSGD, no communication",
                       .topologies = {Topology::kAllreduce}, .takes_codec = false,
                       .make = [](const StrategyContext& c) { return std::make_unique<SignStepStrategy>(c); }});
    return true;
  }();
  (void)once;
}

TEST(DummyStrategy, IsListedAndRunByTheTrainingLoop) {
  register_builtin_strategies();
  register_dummy();
  const auto names = strategy_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "test-signstep"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "ssgd"), names.end());
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));

  const Dataset data = make_synthetic_dataset(SyntheticOptions{64, 10, 1, 28, 28, 1.0f, 3, 0});
  StrategyOptions so;
  so.world = WorldLayout{1, 0};
  so.sgd.lr = 0.125f;
  std::vector<float> before;
  bool moved_by_sign = true;
  g_steps = 0;
  testing::run_strategy_locally("test-signstep", so, data, 8, 3,
                                [&](comm::Communicator&, int step, FlatParams& p, Strategy& s, Model&) {
                                  EXPECT_EQ(s.name(), "test-signstep");
                                  auto w = p.weights();
                                  auto g = p.grads();
                                  if (step >= 0)
                                    for (std::size_t i = 0; i < w.size(); ++i) {
                                      const float d = before[i] - w[i];
                                      moved_by_sign &= g[i] == 0 ? d == 0 : std::abs(std::abs(d) - 0.125f) < 1e-6f;
                                    }
                                  before.assign(w.begin(), w.end());
                                });
  EXPECT_EQ(g_steps.load(), 3);
  EXPECT_TRUE(moved_by_sign);
}

TEST(DummyStrategy, CapabilitiesDecideValidationAndComparePlans) {
  register_builtin_strategies();
  register_dummy();
  EXPECT_THROW(register_strategy({.name = "test-signstep", .summary = "again", .topologies = {Topology::kAllreduce},
                                  .make = [](const StrategyContext& c) { return std::make_unique<SignStepStrategy>(c); }}),
               InvalidArgument);
  TrainOptions o;
  o.algo = "test-signstep";
  o.num_workers = 2;
  o.deterministic = true;  // deterministic is the default capability
  validate(o);
  o.codec = "twobit";  // takes_codec = false: only "none"
  EXPECT_THROW(validate(o), InvalidArgument);
  EXPECT_TRUE(supports_determinism("test-signstep"));
  EXPECT_FALSE(supports_determinism("asgd"));

  const auto plan = compare_plan({"test-signstep", "cdsgd"}, {"none", "topk"}, {"1Gbps"});
  std::vector<std::string> rows;
  for (const auto& c : plan) rows.push_back(c.algo + "/" + c.codec + "/" + c.topology);
  EXPECT_EQ(rows, (std::vector<std::string>{"test-signstep/none/allreduce", "cdsgd/topk/ps",
                                            "compute-only/none/allreduce"}));
}

TEST(DummyStrategy, DefaultCodecIsTheEntrysNotANameCompare) {
  register_builtin_strategies();
  EXPECT_EQ(default_codec("cdsgd:threshold=0.25"), "twobit:threshold=0.25");
  EXPECT_EQ(default_codec("ssgd"), "none");
  const auto plan = compare_plan({"cdsgd"}, {"none"}, {"none"});
  ASSERT_FALSE(plan.empty());
  EXPECT_EQ(plan.front().codec, "twobit");  // the default codec by name, as before
  EXPECT_THROW(strategy_info("no-such-algo"), InvalidArgument);
}

// The identity codec with options ("none:ef=0", as advise and summaries print it) compresses
// nothing: a codec-needing algorithm falls back to its default codec, and the run's name has no
// codec suffix, as for "none" (the registry's `identity`, not the name "none", decides).
TEST(DummyStrategy, TheIdentityCodecWithOptionsIsNotACompressingCodec) {
  register_builtin_strategies();
  const auto plan = compare_plan({"ssgd", "cdsgd"}, {"none:ef=0"}, {"1Gbps"});
  std::vector<std::string> rows;
  for (const auto& c : plan) rows.push_back(c.name + "/" + c.codec);
  EXPECT_EQ(rows, (std::vector<std::string>{"ssgd_1Gbps/none:ef=0", "cdsgd-twobit_1Gbps/twobit",
                                            "compute-only_1Gbps/none"}));
}

TEST(DummyStrategy, ABareDefaultCodecNameRunsWithTheDefaultsOptions) {
  const std::vector<SpecShorthand> threshold = {{"--threshold", "threshold", "0.25"}};
  EXPECT_EQ(compare_run_codec("twobit", threshold), "twobit:threshold=0.25");  // cdsgd's default, --threshold
  for (const char* as_given : {"twobit:threshold=0.1", "none", "topk", "fp16:ef=1"})
    EXPECT_EQ(compare_run_codec(as_given, threshold), as_given);
}

}  // namespace
}  // namespace ferry::train
