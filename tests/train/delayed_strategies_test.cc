// The delayed, local and overlapping strategies against their definitions (docs/algorithms.md):
// reductions to OD-SGD / S-SGD, warm-up, full-precision correction counted in wire bytes, and
// option errors. Threads as ranks, the mlp on synthetic data, weights compared within 1e-5.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>
#include <mutex>

#include "comm/local/local_communicator.h"
#include "core/error.h"
#include "ps/protocol.h"
#include "train/data/data_loader.h"
#include "train/data/synthetic_dataset.h"
#include "train/flat_params.h"
#include "train/gradient_codecs.h"
#include "train/models/model.h"
#include "train/ps_setup.h"
#include "train/strategy.h"
#include "train/train_options.h"
#include "train/wfbp_strategy.h"
#include "local_training.h"

namespace ferry::train {
namespace {

constexpr int kSteps = 12;
constexpr std::int64_t kBatch = 16;


// Forwards everything to `inner` and records, per push request, the payload bytes it carries.
class PushCounter final : public comm::Communicator {
 public:
  explicit PushCounter(comm::Communicator* inner) : inner_(inner) {}
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  void send(int dst, int tag, std::span<const std::byte> data) override {
    record(tag, data);
    inner_->send(dst, tag, data);
  }
  comm::Message recv(int src, int tag) override { return inner_->recv(src, tag); }
  comm::Ticket isend(int dst, int tag, std::vector<std::byte> data) override {
    record(tag, data);
    return inner_->isend(dst, tag, std::move(data));
  }
  comm::Ticket irecv(int src, int tag, std::span<std::byte> out) override { return inner_->irecv(src, tag, out); }
  void allreduce_sum(std::span<float> d) override { inner_->allreduce_sum(d); }
  void allreduce_sum(std::span<double> d) override { inner_->allreduce_sum(d); }
  void broadcast(std::span<std::byte> d, int root) override { inner_->broadcast(d, root); }
  std::vector<std::vector<std::byte>> allgather(std::span<const std::byte> mine) override {
    return inner_->allgather(mine);
  }
  void barrier() override { inner_->barrier(); }
  comm::CommCounters counters() const override { return inner_->counters(); }

  // Payload bytes of each push, in the order they were sent.
  std::vector<std::size_t> push_bytes() {
    std::lock_guard lock(mu_);
    return push_bytes_;
  }

 private:
  void record(int tag, std::span<const std::byte> data) {
    if (tag != comm::kTagPsRequest || data.size() < sizeof(ps::RequestHeader)) return;
    ps::RequestHeader h;
    std::memcpy(&h, data.data(), sizeof h);
    if (h.op != ps::Op::kPush) return;
    std::lock_guard lock(mu_);
    push_bytes_.push_back(data.size() - sizeof h);
  }
  comm::Communicator* inner_;  // outlives this (the test's rank)
  std::mutex mu_;
  std::vector<std::size_t> push_bytes_;
};

struct RunResult {
  std::vector<std::vector<float>> per_step;  // worker 0's weights after every step
  std::vector<float> final;                  // worker 0's weights after finish()
  std::vector<std::size_t> push_bytes;       // worker 0's pushes, payload bytes
  std::vector<float> worker1_final;          // worker 1's weights after finish()
  std::size_t buckets = 0;                   // wfbp
};

StrategyOptions options_for(Topology topology, WorldLayout world) {
  return StrategyOptions{topology, world, ps::SgdOptions{0.05f, 0.9f, 0.0f, 1.0f}};
}

// complete_each_step = false: per_step holds the weights as step() left them, and wfbp's
// updates finish in the next forward (its layer gate), as in `ferry train`.
// so.algo: the spec with the algorithm's keys; empty: `algo` with no warm-up (W = 0).
RunResult run(const std::string& algo, StrategyOptions so, int steps = kSteps, bool complete_each_step = true) {
  if (so.algo.empty()) so.algo = testing::with_keys(algo, {{"warmup_steps", "0"}});
  RunResult result;
  testing::run_strategy_locally(
      algo, so, testing::small_dataset(), kBatch, steps,
      [&](comm::Communicator& c, int step, FlatParams& params, Strategy& strategy, Model&) {
        std::vector<float> w(params.weights().begin(), params.weights().end());
        if (c.rank() == 0 && step >= 0) result.per_step.push_back(std::move(w));
        if (step != testing::kAfterFinish) return;
        if (c.rank() == 0) {
          result.final = std::move(w);
          result.push_bytes = dynamic_cast<PushCounter&>(c).push_bytes();
          if (auto* wfbp = dynamic_cast<WfbpStrategy*>(&strategy)) result.buckets = wfbp->num_buckets();
        }
        if (c.rank() == 1) result.worker1_final = std::move(w);
      },
      "mlp", [](comm::Communicator& raw) { return std::make_unique<PushCounter>(&raw); }, {}, complete_each_step);
  return result;
}

using testing::max_abs_diff;

// Two workers: the server's sum a + b does not depend on which push arrives first, so runs
// are bit-for-bit repeatable (with more workers the arrival order changes the rounding, and a
// ReLU flipping on a rounding difference can then move weights by ~1e-4).
const WorldLayout kPs{2, 2};
const WorldLayout kAllreduce{4, 0};

void expect_same_steps(const RunResult& a, const RunResult& b, int from, int to, const std::string& what) {
  ASSERT_GE(a.per_step.size(), static_cast<std::size_t>(to));
  ASSERT_GE(b.per_step.size(), static_cast<std::size_t>(to));
  for (int t = from; t < to; ++t) EXPECT_LT(max_abs_diff(a.per_step[t], b.per_step[t]), 1e-5) << what << " step " << t;
}

TEST(DelayedStrategies, WarmupIsSsgdStepForStep) {
  const RunResult ssgd = run("ssgd", options_for(Topology::kParameterServer, kPs));
  for (const char* algo : {"odsgd", "ssdsgd", "cdsgd"}) {
    auto so = options_for(Topology::kParameterServer, kPs);
    so.algo = testing::with_keys(algo, {{"warmup_steps", "6"}});
    if (std::string(algo) == "cdsgd") so.codec = "twobit:threshold=0.01";
    const RunResult r = run(algo, so);
    expect_same_steps(r, ssgd, 0, 6, algo);
    // After the warm-up the algorithm is no longer S-SGD.
    EXPECT_GT(max_abs_diff(r.per_step[8], ssgd.per_step[8]), 1e-5) << algo;
  }
}

TEST(DelayedStrategies, SsdSgdWithOneStepDelayAndNoGluIsOdSgd) {
  auto so = options_for(Topology::kParameterServer, kPs);
  so.algo = "odsgd:warmup_steps=3";
  const RunResult od = run("odsgd", so);
  so.algo = "ssdsgd:warmup_steps=3,delay_steps=1,local_update=sgd";
  const RunResult ssd = run("ssdsgd", so);
  expect_same_steps(ssd, od, 0, kSteps, "ssdsgd k=1");
  EXPECT_LT(max_abs_diff(ssd.final, od.final), 1e-5);
  // GLU and k = 4 change the trajectory (the comparison above can fail).
  so.algo = "ssdsgd:warmup_steps=3,delay_steps=4,local_update=glu";
  EXPECT_GT(max_abs_diff(run("ssdsgd", so).per_step[kSteps - 1], od.per_step[kSteps - 1]), 1e-5);
}

TEST(DelayedStrategies, CdSgdWithoutCodecIsOdSgd) {
  auto so = options_for(Topology::kParameterServer, kPs);
  so.algo = "odsgd:warmup_steps=2";
  const RunResult od = run("odsgd", so);
  so.algo = "cdsgd:warmup_steps=2";
  const RunResult cd = run("cdsgd", so);  // so.codec == "none"
  expect_same_steps(cd, od, 0, kSteps, "cdsgd none");
  EXPECT_LT(max_abs_diff(cd.final, od.final), 1e-5);
}

TEST(DelayedStrategies, OdSgdWithOneWorkerIsSgd) {
  // One worker, W = 0, η_l = η: the local optimizer sees the same gradients as the server's,
  // so its velocity is the server's and w_local(t+1) = w_global(t) + v(t+1) = w_global(t+1):
  // OD-SGD is plain SGD step for step. A local lr of 2η breaks this (the test can fail).
  auto so = options_for(Topology::kParameterServer, WorldLayout{1, 1});
  const RunResult ssgd = run("ssgd", so);
  const RunResult od = run("odsgd", so);
  expect_same_steps(od, ssgd, 0, kSteps, "odsgd N=1");
  EXPECT_LT(max_abs_diff(od.final, ssgd.final), 1e-5);
  so.algo = "odsgd:warmup_steps=0,lr_local=0.1";
  EXPECT_GT(max_abs_diff(run("odsgd", so).per_step[kSteps - 1], ssgd.per_step[kSteps - 1]), 1e-5);
}

TEST(DelayedStrategies, CdSgdPushesFullPrecisionExactlyEveryKIterations) {
  auto so = options_for(Topology::kParameterServer, WorldLayout{4, 1});
  so.algo = "cdsgd:warmup_steps=2,correction_steps=3";
  so.codec = "twobit:threshold=0.01";
  const RunResult cd = run("cdsgd", so, 14);
  auto model = make_model("mlp", 3);
  const std::size_t keys = model->parameters().size();  // one server: one key per tensor
  const std::size_t fp32 = static_cast<std::size_t>(model->parameter_count()) * sizeof(float);
  ASSERT_EQ(cd.push_bytes.size(), keys * 14);
  for (int t = 0; t < 14; ++t) {
    std::size_t bytes = 0;
    for (std::size_t k = 0; k < keys; ++k) bytes += cd.push_bytes[t * keys + k];
    const bool warmup = t < 2, correction = t >= 2 && (t - 2 + 1) % 3 == 0;
    if (warmup || correction)
      EXPECT_EQ(bytes, fp32) << "iteration " << t;
    else
      EXPECT_LT(bytes, fp32 / 8) << "iteration " << t;  // 2 bits per value, plus headers
  }
}

// localsgd's options are keys of its spec; --sync-every and --post-local fold into it in one place.
TEST(LocalSgd, OptionsAreSpecKeysAndTheFlagsFoldIntoThem) {
  register_builtin_strategies();
  EXPECT_EQ(canonical_algo("localsgd"), "localsgd:sync_every=4,post_local=0");
  const auto flags = [](const std::string& sync_every, const std::string& post_local) {
    return std::vector<SpecShorthand>{{"--sync-every", "sync_every", sync_every}, {"--post-local", "post_local", post_local}};
  };
  EXPECT_EQ(fold_shorthands("localsgd", flags("8", "")), "localsgd:sync_every=8,post_local=0");
  EXPECT_EQ(fold_shorthands("localsgd:post_local=3", flags("2", "")), "localsgd:sync_every=2,post_local=3");
  EXPECT_EQ(fold_shorthands("localsgd:sync_every=2", flags("2", "")), "localsgd:sync_every=2,post_local=0");
  EXPECT_EQ(fold_shorthands("ssgd", flags("8", "5")), "ssgd") << "another strategy's flags are left out";
  const auto message = [](const std::string& algo, const std::vector<SpecShorthand>& given) {
    try {
      fold_shorthands(algo, given);
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("localsgd:sync_every=2", flags("8", "")),
            "--sync-every 8 contradicts --algo localsgd:sync_every=2 (sync_every=2)");
  EXPECT_EQ(message("localsgd", flags("0", "")), "--sync-every must be at least 1, got 0");
  EXPECT_EQ(message("localsgd", flags("", "-1")), "--post-local must be at least 0, got -1");
  EXPECT_NE(message("localsgd", flags("x", "")).find("--sync-every x: "), std::string::npos);
  EXPECT_EQ(message("localsgd:sync_every=0", {}), "--algo localsgd: sync_every must be at least 1, got 0");
  EXPECT_NE(message("localsgd:every=2", {}).find("every"), std::string::npos) << "an unknown key is refused";
}

TEST(LocalSgd, SyncEveryStepIsSsgd) {
  const RunResult ssgd = run("ssgd", options_for(Topology::kAllreduce, kAllreduce));
  auto so = options_for(Topology::kAllreduce, kAllreduce);
  so.algo = "localsgd:sync_every=1";
  const RunResult local = run("localsgd", so);
  expect_same_steps(local, ssgd, 0, kSteps, "localsgd H=1");
  // Post-local: the first K steps are S-SGD, then models drift apart between averagings.
  so.algo = "localsgd:sync_every=4,post_local=5";
  const RunResult post = run("localsgd", so);
  expect_same_steps(post, ssgd, 0, 5, "localsgd K=5");
  EXPECT_GT(max_abs_diff(post.per_step[6], ssgd.per_step[6]), 1e-5);
  EXPECT_LT(max_abs_diff(post.final, post.worker1_final), 1e-6) << "finish() averages the models";
}

TEST(Wfbp, EqualsSsgdOnAllreduceAndParameterServer) {
  for (Topology topology : {Topology::kAllreduce, Topology::kParameterServer}) {
    const WorldLayout world = topology == Topology::kAllreduce ? kAllreduce : kPs;
    const RunResult ssgd = run("ssgd", options_for(topology, world));
    auto so = options_for(topology, world);
    so.algo = "wfbp:bucket_mb=0.05";  // several buckets for the mlp
    const RunResult wfbp = run("wfbp", so);
    EXPECT_GT(wfbp.buckets, 1u);
    expect_same_steps(wfbp, ssgd, 0, kSteps, topology_name(topology));
    EXPECT_LT(max_abs_diff(wfbp.final, ssgd.final), 1e-5);
    // As in `ferry train`: step() returns before any bucket is updated, and the next forward
    // completes each bucket as it enters the bucket's first layer; same arithmetic.
    const RunResult gated = run("wfbp", so, kSteps, /*complete_each_step=*/false);
    for (int t = 1; t < kSteps; ++t)
      EXPECT_LT(max_abs_diff(gated.per_step[t], ssgd.per_step[t - 1]), 1e-5) << "after step " << t;
    EXPECT_GT(max_abs_diff(gated.per_step[kSteps - 1], ssgd.per_step[kSteps - 1]), 1e-5);
    EXPECT_LT(max_abs_diff(gated.final, ssgd.final), 1e-5) << topology_name(topology);
  }
}

TEST(ComputeOnly, NeverSynchronises) {
  const RunResult r = run("compute-only", options_for(Topology::kAllreduce, kAllreduce), 3);
  EXPECT_GT(max_abs_diff(r.final, r.worker1_final), 1e-5);
  EXPECT_TRUE(r.push_bytes.empty());
}

TEST(DelayedOptions, BadValuesAreClearErrors) {
  auto expect_error = [](TrainOptions o, const std::string& want) {
    try {
      validate(o);
      ADD_FAILURE() << "no error, wanted " << want;
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  };
  TrainOptions base;
  base.algo = "ssdsgd";
  base.num_servers = 1;
  expect_error([&] { auto o = base; o.algo = "ssdsgd:delay_steps=0"; return o; }(), "delay_steps must be at least 1");
  expect_error([&] { auto o = base; o.algo = "ssdsgd:glu_coef=-1"; return o; }(), "glu_coef must be at least 0");
  expect_error([&] { auto o = base; o.algo = "ssdsgd:local_update=adam"; return o; }(), "local_update must be glu or sgd");
  expect_error([&] { auto o = base; o.algo = "ssdsgd:lr_local=-0.1"; return o; }(), "lr_local");
  expect_error([&] { auto o = base; o.algo = "ssdsgd:warmup_steps=-1"; return o; }(), "warmup_steps");
  expect_error([&] { auto o = base; o.algo = "cdsgd:correction_steps=0"; return o; }(),
               "correction_steps must be at least 1");
  expect_error([&] { auto o = base; o.algo = "cdsgd:threshold=0"; return o; }(), "threshold");
  expect_error([&] { auto o = base; o.algo = "localsgd:sync_every=0"; o.num_servers = 0; return o; }(),
               "sync_every must be at least 1");
  expect_error([&] { auto o = base; o.algo = "wfbp:bucket_mb=0"; o.num_servers = 0; return o; }(),
               "bucket_mb must be greater than 0");
  for (const char* algo : {"odsgd", "ssdsgd", "cdsgd"})
    expect_error([&] { auto o = base; o.algo = algo; o.topology = "allreduce"; o.num_servers = 0; return o; }(),
                 std::string(algo) + " does not run on --topology allreduce");
  expect_error([&] { auto o = base; o.algo = "localsgd"; o.topology = "ps"; return o; }(),
               "localsgd does not run on --topology ps");
  // The strategies check their own topology too (for callers that skip validate()).
  register_builtin_strategies();
  comm::run_local_ranks(1, [](comm::Communicator& c) {
    StrategyOptions so{Topology::kAllreduce, WorldLayout{1, 0}, ps::SgdOptions{}};
    EXPECT_THROW(strategy_info("odsgd").make(StrategyContext{&c, so}), InvalidArgument);
    so.algo = "ssdsgd:delay_steps=0";
    so.topology = Topology::kParameterServer;
    EXPECT_THROW(strategy_info("ssdsgd").make(StrategyContext{&c, so}), InvalidArgument);
  });
}

}  // namespace
}  // namespace ferry::train
