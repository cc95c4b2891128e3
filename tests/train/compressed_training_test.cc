// Gradient codecs inside S-SGD and ASGD (StrategyOptions::codec): the parameter-server path
// (per-key codecs, server decodes) and the allreduce path (per-tensor codecs, allgather of
// packed payloads or the codec's own allreduce) compute the same thing, the identity codec is
// the uncompressed path, and the wire really carries the packed bytes.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <mutex>

#include "comm/local/local_communicator.h"
#include "compress/codec_registry.h"
#include "core/error.h"
#include "train/data/data_loader.h"
#include "train/data/synthetic_dataset.h"
#include "train/flat_params.h"
#include "train/gradient_codecs.h"
#include "train/models/evaluate.h"
#include "train/models/model.h"
#include "train/ps_setup.h"
#include "train/strategy.h"
#include "train/train_options.h"
#include "local_training.h"

namespace ferry::train {
namespace {

constexpr std::int64_t kBatch = 16;

const Dataset& train_data() {
  static Dataset d = make_synthetic_dataset(SyntheticOptions{2048, 10, 1, 28, 28, 1.0f, 7, 0});
  return d;
}
const Dataset& test_data() {
  static Dataset d = make_synthetic_dataset(SyntheticOptions{512, 10, 1, 28, 28, 1.0f, 7, 1});
  return d;
}

struct RunConfig {
  std::string algo = "ssgd";
  Topology topology = Topology::kAllreduce;
  int workers = 4;
  int servers = 0;
  std::string codec = "none";
  std::string pull_codec = "";
  int steps = 20;
  float lr = 0.05f;
  float momentum = 0.9f;
};

struct RunResult {
  std::vector<float> weights;              // worker 0's final weights
  std::vector<float> weights1;             // worker 1's final weights (when there are two)
  std::vector<std::uint64_t> step_bytes;   // per worker: bytes sent between setup and finish
  std::vector<std::uint64_t> step_recv;    // per worker: bytes received between setup and finish
  double test_acc = 0;                     // worker 0's model on the synthetic test set
};

RunResult run(const RunConfig& cfg) {
  RunResult result;
  result.step_bytes.assign(cfg.workers, 0);
  result.step_recv.assign(cfg.workers, 0);
  std::vector<std::uint64_t> after_setup(cfg.workers, 0), recv_after_setup(cfg.workers, 0);
  std::mutex mu;
  StrategyOptions so{cfg.topology, WorldLayout{cfg.workers, cfg.servers}, ps::SgdOptions{cfg.lr, cfg.momentum, 0.0f, 1.0f},
                     cfg.codec, cfg.pull_codec};
  testing::run_strategy_locally(
      cfg.algo, so, train_data(), kBatch, cfg.steps,
      [&](comm::Communicator& c, int step, FlatParams& params, Strategy&, Model& model) {
        const std::uint64_t sent = c.counters().bytes_sent, recv = c.counters().bytes_recv;
        std::lock_guard lock(mu);
        if (step == testing::kAfterSetup) after_setup[c.rank()] = sent, recv_after_setup[c.rank()] = recv;
        if (step == cfg.steps - 1) {
          result.step_bytes[c.rank()] = sent - after_setup[c.rank()];
          result.step_recv[c.rank()] = recv - recv_after_setup[c.rank()];
        }
        if (step == testing::kAfterFinish && c.rank() == 1) result.weights1.assign(params.weights().begin(), params.weights().end());
        if (step == testing::kAfterFinish && c.rank() == 0) {
          result.weights.assign(params.weights().begin(), params.weights().end());
          result.test_acc = evaluate(model, test_data()).accuracy;
        }
      });
  return result;
}

std::vector<float> initial_weights() {
  auto model = make_model("mlp", 3);
  FlatParams p(model->parameters());
  return {p.weights().begin(), p.weights().end()};
}

using testing::max_abs_diff;

std::vector<std::size_t> mlp_numels() {
  std::vector<std::size_t> n;
  for (const auto& p : make_model("mlp", 3)->parameters()) n.push_back(p.numel());
  return n;
}

// Whether each parameter of the mlp is 1-D (a bias), which every codec sends raw (raw_1d).
std::vector<bool> mlp_is_1d() {
  std::vector<bool> v;
  for (const auto& p : make_model("mlp", 3)->parameters()) v.push_back(p.dim() == 1);
  return v;
}

// A threshold small enough that 2-bit codes carry information within 20 steps.
const char* kTwobit = "twobit:threshold=0.005";
// The same with the biases coded too: every tensor's update is then the same element-wise
// arithmetic on both topologies (a raw bias is ring-allreduced, summed in another order).
const char* kTwobitAll = "twobit:threshold=0.005,raw_1d=0";

TEST(CompressedSsgd, TwobitOnParameterServerEqualsTwobitOnAllreduce) {
  RunConfig ar{.codec = kTwobitAll};
  RunConfig ps1{.topology = Topology::kParameterServer, .servers = 1, .codec = kTwobitAll};
  RunConfig ps2 = ps1;
  ps2.servers = 2;  // keys split tensors: the pieces are coded 1-D, element-wise the same
  auto a = run(ar), p1 = run(ps1), p2 = run(ps2);
  ASSERT_GT(max_abs_diff(a.weights, initial_weights()), 1e-3) << "2-bit training did not move the weights";
  EXPECT_LT(max_abs_diff(a.weights, p1.weights), 1e-5);
  EXPECT_LT(max_abs_diff(a.weights, p2.weights), 1e-5);
  // Compression changed the trajectory (it is not silently the fp32 path).
  EXPECT_GT(max_abs_diff(a.weights, run(RunConfig{}).weights), 1e-4);
}

TEST(CompressedSsgd, IdentityCodecIsTheUncompressedPath) {
  for (Topology topology : {Topology::kAllreduce, Topology::kParameterServer}) {
    int servers = topology == Topology::kParameterServer ? 2 : 0;
    auto plain = run(RunConfig{.topology = topology, .servers = servers});
    // "none" is the raw fp32 path itself; "none:ef=1" goes through the codec machinery
    // (payloads, headers, allgather + decode_add, server decoder) with a lossless codec.
    auto none = run(RunConfig{.topology = topology, .servers = servers, .codec = "none"});
    auto coded = run(RunConfig{.topology = topology, .servers = servers, .codec = "none:ef=1"});
    // (A server sums a round in worker order, so PS runs are bit-reproducible too.)
    EXPECT_EQ(max_abs_diff(plain.weights, none.weights), 0.0) << topology_name(topology);
    EXPECT_EQ(plain.step_bytes, none.step_bytes) << topology_name(topology);
    EXPECT_LT(max_abs_diff(plain.weights, coded.weights), 1e-5) << topology_name(topology);
  }
}

// 2-bit payload of one tensor/key: 16-byte header + ⌈n/16⌉ words.
std::uint64_t twobit_bytes(std::size_t n) { return 16 + 4 * ((n + 15) / 16); }
// A raw (none) payload: 16-byte header + n fp32.
std::uint64_t raw_bytes(std::size_t n) { return 16 + 4 * n; }
// Bytes rank r of N sends in a ring allreduce of n floats (comm/p2p_collectives.cc): N−1
// reduce-scatter and N−1 allgather steps, each one chunk of the n floats split N ways.
std::uint64_t ring_bytes(std::size_t n, int N, int r) {
  auto chunk_len = [&](int c) { return n / N + (static_cast<std::size_t>(c) < n % N ? 1 : 0); };
  std::uint64_t b = 0;
  for (int s = 0; s < N - 1; ++s) b += 4 * (chunk_len((r - s + N) % N) + chunk_len((r + 1 - s + N) % N));
  return b;
}

TEST(CompressedSsgd, WireBytesArePackedTwoBitCodes) {
  constexpr int kSteps = 5, kWorkers = 4;
  const auto numels = mlp_numels();

  // Parameter server, one server, one key per tensor: a worker sends per step one push (request
  // header + payload) and one pull request per key.
  const auto is_1d = mlp_is_1d();
  const std::uint64_t req = sizeof(ps::RequestHeader);
  std::uint64_t fp32_step = 0, twobit_step = 0, all_twobit_step = 0;
  for (std::size_t i = 0; i < numels.size(); ++i) {
    const std::size_t n = numels[i];
    fp32_step += req + 4 * n + req;
    twobit_step += req + (is_1d[i] ? raw_bytes(n) : twobit_bytes(n)) + req;  // biases raw
    all_twobit_step += req + twobit_bytes(n) + req;
  }
  RunConfig ps{.topology = Topology::kParameterServer, .servers = 1, .steps = kSteps};
  auto plain = run(ps);
  ps.codec = kTwobit;
  auto coded = run(ps);
  ps.codec = kTwobitAll;
  auto all_coded = run(ps);
  for (int w = 0; w < kWorkers; ++w) {
    EXPECT_EQ(plain.step_bytes[w], kSteps * fp32_step) << "worker " << w;
    EXPECT_EQ(coded.step_bytes[w], kSteps * twobit_step) << "worker " << w;
    EXPECT_EQ(all_coded.step_bytes[w], kSteps * all_twobit_step) << "worker " << w;
  }
  double ratio = double(coded.step_bytes[1]) / plain.step_bytes[1];
  EXPECT_GT(ratio, 1.0 / 16);
  EXPECT_LT(ratio, 1.0 / 15);  // ~1/16 of fp32 plus headers

  // Allreduce: one allgather per step of the one-byte "gradient finite" flags, one of all
  // tensors' length-prefixed payloads; on a ring each rank forwards N−1 of each.
  // With raw biases, those are ring-allreduced instead, one allreduce each.
  std::uint64_t packed = 1, packed_weights = 1;
  for (std::size_t i = 0; i < numels.size(); ++i) {
    packed += 8 + twobit_bytes(numels[i]);
    if (!is_1d[i]) packed_weights += 8 + twobit_bytes(numels[i]);
  }
  auto ar = run(RunConfig{.workers = kWorkers, .codec = kTwobitAll, .steps = kSteps});
  auto ar_raw = run(RunConfig{.workers = kWorkers, .codec = kTwobit, .steps = kSteps});
  auto ar_plain = run(RunConfig{.workers = kWorkers, .steps = kSteps});
  for (int w = 0; w < kWorkers; ++w) {
    EXPECT_EQ(ar.step_bytes[w], kSteps * (kWorkers - 1) * packed) << "worker " << w;
    std::uint64_t raw_step = (kWorkers - 1) * packed_weights;
    for (std::size_t i = 0; i < numels.size(); ++i)
      if (is_1d[i]) raw_step += ring_bytes(numels[i], kWorkers, w);
    EXPECT_EQ(ar_raw.step_bytes[w], kSteps * raw_step) << "worker " << w;
  }
  // A ring allreduce sends 2(N−1)/N of 4n bytes; the allgather of 2-bit codes (N−1)·n/4.
  double ar_ratio = double(ar.step_bytes[0]) / ar_plain.step_bytes[0];
  EXPECT_NEAR(ar_ratio, kWorkers / 32.0, 0.01);
}

// --compress-pull: the server sends each worker the 2-bit coded change of a key since that
// worker's previous pull; workers decode into replicas.
TEST(CompressedPulls, RepliesArePackedAndWorkersStayIdentical) {
  constexpr int kSteps = 5;
  const auto numels = mlp_numels();
  RunConfig cfg{.topology = Topology::kParameterServer, .servers = 1, .steps = kSteps};
  auto plain = run(cfg);
  cfg.pull_codec = pull_codec_spec(kTwobit);
  auto coded = run(cfg);
  // One reply per key and step: fp32, or a 4-byte format tag and the 2-bit payload.
  const auto is_1d = mlp_is_1d();
  std::uint64_t fp32_step = 0, twobit_step = 0;
  for (std::size_t i = 0; i < numels.size(); ++i)  // biases raw (raw_1d)
    fp32_step += 4 * numels[i], twobit_step += 4 + (is_1d[i] ? raw_bytes(numels[i]) : twobit_bytes(numels[i]));
  for (int w = 0; w < 4; ++w) {
    EXPECT_EQ(plain.step_recv[w], kSteps * fp32_step) << "worker " << w;
    EXPECT_EQ(coded.step_recv[w], kSteps * twobit_step) << "worker " << w;
    EXPECT_EQ(plain.step_bytes[w], coded.step_bytes[w]) << "pushes stay fp32, worker " << w;
  }
  // Every worker decodes the same replies into the same replica.
  ASSERT_FALSE(coded.weights1.empty());
  EXPECT_EQ(max_abs_diff(coded.weights, coded.weights1), 0.0);
  // Lossy but tracking: 2-bit pulls change the weights, by less than what training moved them.
  const double moved = max_abs_diff(plain.weights, initial_weights());
  const double error = max_abs_diff(plain.weights, coded.weights);
  EXPECT_GT(error, 0.0);
  EXPECT_LT(error, moved);
}

TEST(CompressedPulls, Fp16PullsFollowFp32Pulls) {
  // fp16 with error feedback: a worker's replica is the server's weights up to fp16 rounding of
  // the last change, so the run follows fp32 pulls closely.
  RunConfig cfg{.topology = Topology::kParameterServer, .servers = 2};
  auto plain = run(cfg);
  cfg.pull_codec = pull_codec_spec("fp16");
  auto coded = run(cfg);
  EXPECT_LT(max_abs_diff(plain.weights, coded.weights), 1e-3);
}

TEST(CompressedPulls, BadCombinationsAreClearErrors) {
  TrainOptions o;
  o.pull_codec = "fp16";
  o.topology = "allreduce";
  EXPECT_THROW(
      {
        try {
          validate(o);
        } catch (const InvalidArgument& e) {
          EXPECT_NE(std::string(e.what()).find("--compress-pull needs the parameter-server topology"), std::string::npos)
              << e.what();
          throw;
        }
      },
      InvalidArgument);
  for (const char* spec : {"powersgd", "dgc", "none", "nosuch"}) {
    EXPECT_THROW(pull_codec_spec(spec), InvalidArgument) << spec;
  }
  EXPECT_EQ(pull_codec_spec("topk:ratio=0.1"), compress::canonical_codec_spec("topk:ratio=0.1,ef=1"));
}

TEST(CompressedSsgd, EveryElementwiseCodecAgreesAcrossTopologies) {
  // With one server every key is a whole tensor, and codecs seed their randomness from the
  // tensor id (= key id) and the rank: both topologies then compute the same decoded sum.
  // PowerSGD is the exception: on allreduce it sums P and Q, on a PS each worker's P̂Qᵀ.
  // Two workers: a + b == b + a, so the server's arrival order cannot change a bit.
  for (const char* spec : {"fp16", "onebit", "qsgd", "terngrad", "topk:ratio=0.05", "randomk:ratio=0.05",
                           "dgc:ratio=0.05,momentum=0.9"}) {
    RunConfig ar{.workers = 2, .codec = spec, .steps = 8, .momentum = 0.0f};
    RunConfig ps = ar;
    ps.topology = Topology::kParameterServer;
    ps.servers = 1;
    auto a = run(ar), p = run(ps);
    ASSERT_GT(max_abs_diff(a.weights, initial_weights()), 1e-4) << spec;
    EXPECT_EQ(max_abs_diff(a.weights, p.weights), 0.0) << spec;
  }
}

TEST(CompressedSsgd, PowersgdConvergesOnBothTopologies) {
  auto plain = run(RunConfig{.steps = 30});
  auto ar = run(RunConfig{.codec = "powersgd:rank=2", .steps = 30});
  auto ps = run(RunConfig{.topology = Topology::kParameterServer, .servers = 1, .codec = "powersgd:rank=2",
                          .steps = 30});
  // Synthetic data: 10 classes, chance is 10 %; fp32 S-SGD learns it within 30 steps.
  EXPECT_GT(plain.test_acc, 0.9);
  EXPECT_GT(ar.test_acc, plain.test_acc - 0.1);
  EXPECT_GT(ps.test_acc, plain.test_acc - 0.1);
  for (float w : ar.weights) ASSERT_TRUE(std::isfinite(w));
  // Rank 2 of a 784 × 256 matrix: far fewer bytes than fp32 even with an allreduce per factor.
  EXPECT_LT(ar.step_bytes[0], plain.step_bytes[0] / 10);
}

TEST(CompressedAsgd, OneWorkerWithTwobitIsSsgdWithTwobit) {
  // One worker: no staleness, so ASGD applies exactly what S-SGD would.
  auto asgd = run(RunConfig{.algo = "asgd", .topology = Topology::kParameterServer, .workers = 1, .servers = 1,
                            .codec = kTwobit});
  auto ssgd = run(RunConfig{.workers = 1, .codec = kTwobit});
  ASSERT_GT(max_abs_diff(ssgd.weights, initial_weights()), 1e-3);
  EXPECT_LT(max_abs_diff(asgd.weights, ssgd.weights), 1e-5);
}

TEST(CompressedTraining, BadCodecSpecIsOneClearError) {
  TrainOptions o;
  o.codec = "twobit";
  EXPECT_EQ(canonical_codec(o), "twobit:threshold=0.5,momentum_at=worker,raw_1d=1");
  for (const char* bad : {"fourbit", "twobit:threshold=-1", "topk:ratio=7", "twobit:ef=0", "qsgd:levelz=3",
                          "topk:momentum_at=client", "dgc:momentum=0.5"}) {
    o.codec = bad;
    try {
      validate(o);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("--codec '" + std::string(bad) + "'"), std::string::npos) << e.what();
    }
  }
}

TEST(CompressedTraining, KeysCoveringAWholeTensorKeepItsShape) {
  TensorShapes shapes{{256, 784}, {256}, {10, 256}};
  ps::KeyLayout one({256 * 784, 256, 2560}, 1);
  EXPECT_EQ(key_tensor_info(one, 0, shapes, 3).shape, (std::vector<std::int64_t>{256, 784}));
  EXPECT_TRUE(key_tensor_info(one, 1, shapes, 3).shape.empty());
  EXPECT_EQ(key_tensor_info(one, 2, shapes, 3).tensor_id, 2u);
  EXPECT_EQ(key_tensor_info(one, 2, shapes, 3).rank, 3);
  ps::KeyLayout two({256 * 784, 256, 2560}, 2);  // the big matrix is cut in two keys
  EXPECT_TRUE(key_tensor_info(two, 0, shapes, 0).shape.empty());
  EXPECT_EQ(key_tensor_info(two, 0, shapes, 0).numel, two.key(0).length);
}

}  // namespace
}  // namespace ferry::train
