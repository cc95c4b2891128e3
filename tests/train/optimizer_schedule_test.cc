// The optimizer choice and the learning-rate schedules (train/optimizer_choice.h,
// train/lr_schedule.h): a schedule's lr at chosen steps equals its formula; the defaults a run
// gets (AdamW at the DiLoCo paper's values for DiLoCo, SGD for the others, a given --optimizer or
// --lr winning); the algorithms whose update is not the workers' refuse adamw and schedules by name.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <string>

#include "core/error.h"
#include "train/lr_schedule.h"
#include "train/optimizer_choice.h"
#include "train/strategy.h"
#include "train/train_job.h"
#include "train/train_options.h"

namespace ferry::train {
namespace {

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "no error";
}

TEST(LrSchedule, ConstantIsTheBaseLrAfterALinearWarmUp) {
  const LrSchedule flat = LrSchedule::of_spec("constant");
  EXPECT_FALSE(flat.varies());
  for (std::int64_t t : {0, 1, 999, 123456}) EXPECT_EQ(flat.lr_at(0.05f, t), 0.05f);
  const LrSchedule warm = LrSchedule::of_spec("constant:warmup_steps=4");
  EXPECT_TRUE(warm.varies());
  // η·(t + 1)/W: 1/4, 2/4, 3/4, 4/4 of η, then η.
  EXPECT_EQ(warm.lr_at(0.5f, 0), 0.125f);
  EXPECT_EQ(warm.lr_at(0.5f, 1), 0.25f);
  EXPECT_EQ(warm.lr_at(0.5f, 2), 0.375f);
  EXPECT_EQ(warm.lr_at(0.5f, 3), 0.5f);
  EXPECT_EQ(warm.lr_at(0.5f, 4), 0.5f);
  EXPECT_EQ(warm.lr_at(0.5f, 100), 0.5f);
}

// η_t = η_min + ½(η − η_min)(1 + cos(π (t − W)/(T − W))) after the warm-up, η_min = r·η; η_min
// from T on.
TEST(LrSchedule, CosineFollowsItsFormulaAtChosenSteps) {
  const float base = 4e-4f;
  const std::int64_t w = 1000, total = 5000;
  const double r = 0.1;
  const LrSchedule s = LrSchedule::of_spec("cosine:warmup_steps=1000,min_ratio=0.1,steps=5000");
  auto formula = [&](std::int64_t t) {
    if (t < w) return base * double(t + 1) / double(w);
    const double p = std::min(1.0, double(t - w) / double(total - w));
    const double floor = r * base;
    return floor + 0.5 * (base - floor) * (1 + std::cos(std::numbers::pi * p));
  };
  for (std::int64_t t : {0, 1, 499, 999, 1000, 1001, 2000, 3000, 4000, 4999, 5000, 7000})
    EXPECT_EQ(s.lr_at(base, t), static_cast<float>(formula(t))) << "step " << t;
  // Landmarks the formula gives: the peak right after the warm-up, half way between peak and
  // floor at the middle of the decay, the floor at T and after.
  EXPECT_FLOAT_EQ(s.lr_at(base, 999), base);
  EXPECT_FLOAT_EQ(s.lr_at(base, 1000), base);
  EXPECT_FLOAT_EQ(s.lr_at(base, 3000), 0.55f * base);
  EXPECT_FLOAT_EQ(s.lr_at(base, 5000), 0.1f * base);
  EXPECT_FLOAT_EQ(s.lr_at(base, 9000), 0.1f * base);
  // To zero, without warm-up.
  const LrSchedule z = LrSchedule::of_spec("cosine:min_ratio=0,steps=4");
  EXPECT_EQ(z.lr_at(1.0f, 0), 1.0f);
  EXPECT_FLOAT_EQ(z.lr_at(1.0f, 2), 0.5f);
  EXPECT_EQ(z.lr_at(1.0f, 4), 0.0f);
}

TEST(LrSchedule, CanonicalSpecTakesCosinesLengthFromMaxSteps) {
  EXPECT_EQ(canonical_lr_schedule("constant", 0), "constant:warmup_steps=0");
  EXPECT_EQ(canonical_lr_schedule("Cosine:warmup_steps=10", 200), "cosine:warmup_steps=10,min_ratio=0.1,steps=200");
  EXPECT_EQ(canonical_lr_schedule("cosine:steps=0", 50), "cosine:warmup_steps=0,min_ratio=0.1,steps=50");
  EXPECT_EQ(canonical_lr_schedule("cosine:steps=70", 50), "cosine:warmup_steps=0,min_ratio=0.1,steps=70");
  const std::string c = canonical_lr_schedule("cosine:warmup_steps=10", 200);
  EXPECT_EQ(canonical_lr_schedule(c, 0), c);  // a fixed point
  EXPECT_NE(message_of([] { canonical_lr_schedule("cosine", 0); }).find("--max-steps"), std::string::npos);
  EXPECT_NE(message_of([] { canonical_lr_schedule("linear", 10); }).find("unknown --lr-schedule 'linear'"),
            std::string::npos);
  EXPECT_NE(message_of([] { canonical_lr_schedule("cosine:warmup_steps=20", 20); }).find("must exceed warmup_steps"),
            std::string::npos);
  EXPECT_NE(message_of([] { canonical_lr_schedule("cosine:min_ratio=2", 20); }).find("min_ratio"), std::string::npos);
  EXPECT_NE(message_of([] { canonical_lr_schedule("constant:min_ratio=0.5", 20); }).find("unknown option 'min_ratio'"),
            std::string::npos);
}

TEST(OptimizerChoice, SpecsAndDefaults) {
  EXPECT_EQ(canonical_optimizer("SGD"), "sgd");
  EXPECT_EQ(canonical_optimizer("adamw"), "adamw:beta1=0.9,beta2=0.95,eps=1e-08");
  EXPECT_EQ(canonical_optimizer("adamw:beta2=0.999"), "adamw:beta1=0.9,beta2=0.999,eps=1e-08");
  EXPECT_NE(message_of([] { canonical_optimizer("lion"); }).find("unknown --optimizer 'lion'"), std::string::npos);
  EXPECT_NE(message_of([] { canonical_optimizer("adamw:beta1=1"); }).find("beta1"), std::string::npos);
  EXPECT_NE(message_of([] { canonical_optimizer("sgd:beta1=0.9"); }).find("unknown option 'beta1'"),
            std::string::npos);
}

TrainOptions options(const std::string& algo) {
  TrainOptions o;
  o.algo = algo;
  o.model = "mlp";
  o.num_workers = 2;
  o.max_steps = 100;
  return o;
}

TEST(OptimizerChoice, DilocoGetsThePapersAdamWUnlessTheUserChooses) {
  TrainOptions d = with_optimizer_defaults(options("diloco"));
  EXPECT_EQ(d.optimizer, "adamw:beta1=0.9,beta2=0.95,eps=1e-08");
  EXPECT_EQ(d.lr, 4e-4f);
  EXPECT_EQ(d.weight_decay, 0.1f);
  EXPECT_EQ(with_optimizer_defaults(options("streaming-diloco")).optimizer, d.optimizer);
  TrainOptions s = with_optimizer_defaults(options("ssgd"));
  EXPECT_EQ(s.optimizer, "sgd");
  EXPECT_EQ(s.lr, 0.05f);
  EXPECT_EQ(s.weight_decay, 0.0f);
  // A given --lr or --wd wins; a given --optimizer brings its own defaults.
  TrainOptions given = options("diloco");
  given.lr = 1e-3f;
  given.weight_decay = 0.0f;
  d = with_optimizer_defaults(given);
  EXPECT_EQ(d.lr, 1e-3f);
  EXPECT_EQ(d.weight_decay, 0.0f);
  given = options("diloco");
  given.optimizer = "sgd";
  d = with_optimizer_defaults(given);
  EXPECT_EQ(d.optimizer, "sgd");
  EXPECT_EQ(d.lr, 0.05f);
  given = options("ssgd");
  given.optimizer = "adamw";
  EXPECT_EQ(with_optimizer_defaults(given).lr, 4e-4f);
  // The job carries them resolved, to the strategy too.
  const TrainJob job = make_train_job(options("diloco"));
  EXPECT_EQ(job.options.optimizer, "adamw:beta1=0.9,beta2=0.95,eps=1e-08");
  EXPECT_EQ(job.options.lr, 4e-4f);
  EXPECT_EQ(job.strategy_options().optimizer, job.options.optimizer);
  EXPECT_EQ(job.strategy_options().lr_schedule, "constant:warmup_steps=0");
}

TEST(OptimizerChoice, AlgorithmsWhoseUpdateIsNotTheWorkersRefuseAdamwAndSchedules) {
  register_builtin_strategies();
  for (const std::string algo : {"asgd", "odsgd", "ssdsgd", "cdsgd"}) {
    TrainOptions o = options(algo);
    o.num_servers = 1;
    o.optimizer = "adamw";
    const std::string m = message_of([&] { validate(o); });
    EXPECT_NE(m.find("--optimizer adamw:beta1=0.9,beta2=0.95,eps=1e-08: --algo " + algo + " on --topology ps steps SGD"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("ssgd (allreduce)"), std::string::npos) << m;
    o.optimizer = "sgd";
    o.lr_schedule = "cosine";
    EXPECT_NE(message_of([&] { validate(o); }).find("--lr-schedule cosine:warmup_steps=0,min_ratio=0.1,steps=100: --algo " + algo),
              std::string::npos);
    o.lr_schedule = "constant";
    EXPECT_EQ(message_of([&] { validate(o); }), "no error");
  }
  // S-SGD takes them on allreduce, not on the parameter server (the servers step SGD).
  TrainOptions o = options("ssgd");
  o.optimizer = "adamw";
  o.lr_schedule = "cosine:warmup_steps=10";
  EXPECT_EQ(message_of([&] { validate(o); }), "no error");
  o.topology = "ps";
  o.num_servers = 1;
  EXPECT_NE(message_of([&] { validate(o); }).find("--algo ssgd on --topology ps"), std::string::npos);
  // wfbp steps SGD per fusion bucket.
  o = options("wfbp");
  o.optimizer = "adamw";
  EXPECT_NE(message_of([&] { validate(o); }).find("--algo wfbp on --topology allreduce"), std::string::npos);
  for (const std::string algo : {"localsgd", "diloco", "streaming-diloco:inner_steps=8", "compute-only"}) {
    o = options(algo);
    o.optimizer = "adamw";
    o.lr_schedule = "cosine";
    EXPECT_EQ(message_of([&] { validate(o); }), "no error") << algo;
  }
  // EF21's aggregate integrates velocity increments, which AdamW does not keep.
  o = options("ssgd");
  o.optimizer = "adamw";
  o.codec = "randomk:ratio=0.1,ef21=1";
  EXPECT_NE(message_of([&] { validate(o); }).find("ef21"), std::string::npos);
}

}  // namespace
}  // namespace ferry::train
