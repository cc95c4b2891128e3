// A codec's cost where the run pays it (codec_exchange.cc): each term against its formula on a
// constructed profile, and the profiler's new measurements (worker momentum, ring calls) on
// tensors as the strategies build their codecs.
#include <gtest/gtest.h>

#include "advise/cost_model.h"
#include "core/error.h"
#include "test_models.h"

namespace ferry::advise {
namespace {

using testing::scenario;
using testing::synthetic_model;
using train::Topology;

// A codec that sums two tensors in its own scheme (5 ring allreduces of 2000 floats in all) and
// allgathers the rest: every field set, so that each term shows.
CodecCost constructed_codec() {
  CodecCost c;
  c.spec = "constructed";
  c.compressed = true;
  c.custom_allreduce = true;
  c.push_bytes = 30000;
  c.allgather_bytes = 20000;
  c.ring_bytes = 8000;
  c.ring_calls = 5;
  c.encode_s = 0.004;
  c.decode_s = 0.002;
  c.allgather_encode_s = 0.003;
  c.allgather_decode_s = 0.0005;
  c.custom_allreduce_s = 0.001;
  c.momentum_s = 0.0007;
  return c;
}

TEST(CodecExchange, AllreduceTermsEqualTheirFormulas) {
  const ModelProfile m = synthetic_model("m", {100000, 2000}, 0.010, 0.020);
  MachineConstants k;
  k.cores = 2;
  k.cpu_s_per_byte = 1e-9;
  k.message_s = 2e-5;
  Scenario sc = scenario(m, 4, 0, Topology::kAllreduce, 1e8, 5e-5);
  sc.codec = constructed_codec();
  const CostContext x(sc, k);
  const double n = 4, st = 2, a = 5e-5 + 2e-5, B = 1e8;
  // Ring: 2(n-1) steps of R/n bytes, plus 2(n-1) messages for each of the 4 further calls.
  const double ring = 2 * (n - 1) * (8000 / n / B + a) + 4 * 2 * (n - 1) * a + 1e-9 * 4 * (n - 1) / n * 8000 * st;
  // Allgather: (n-1) steps of the payloads; encode and decode of the allgathered tensors only.
  const double gather = (n - 1) * (20000 / B + a) + 1e-9 * 2 * (n - 1) * 20000 * st;
  const double passes = st * 0.001 + st * 0.003 + st * n * 0.0005;
  EXPECT_NEAR(allreduce_exchange_s(x, sc.codec), ring + gather + passes, 1e-12);
  EXPECT_NEAR(worker_codec_s(x, sc.codec), 0.0007 + 0.004, 1e-15);
  EXPECT_NEAR(finite_flag_s(x), (n - 1) * (1 / B + a), 1e-15);
  // S-SGD: compute, the worker's pass, the flag and the exchange, in turn.
  const double compute = 0.030 * st;
  EXPECT_NEAR(predict("ssgd", sc, k).iteration_s,
              compute + st * (0.0007 + 0.004) + (n - 1) * (1 / B + a) + ring + gather + passes, 1e-12);
  // The exchange is DiLoCo's too: every H steps, nothing on the worker (no velocity, no flag).
  sc.algo = "diloco:inner_steps=10";
  EXPECT_NEAR(predict("diloco:inner_steps=10", sc, k).iteration_s, compute + (ring + gather + passes) / 10, 1e-12);
}

TEST(CodecExchange, TheWorkersVelocityPassJoinsEveryPush) {
  // Parameter server, 2 workers on 64 cores: S-SGD pays mom + enc before its round; the delayed
  // family pays it on the communication thread (every push, coded or fp32).
  const ModelProfile m = synthetic_model("m", {1000, 20000}, 0.010, 0.020);
  MachineConstants k;
  k.cores = 64;
  Scenario sc = scenario(m, 2, 1, Topology::kParameterServer, 0, 0);
  sc.codec = constructed_codec();
  EXPECT_NEAR(predict("ssgd", sc, k).iteration_s, 0.030 + 0.0007 + 0.004 + 2 * 0.002, 1e-12);
  // A slow worker pass makes the communication thread the bound of OD-SGD: T = mom + enc.
  sc.codec.momentum_s = 0.05;
  EXPECT_NEAR(predict("odsgd", sc, k).iteration_s, 0.05 + 0.004, 1e-12);
  // CD-SGD's fp32 pushes (every 5th) pass the velocity but not the encoder.
  EXPECT_NEAR(predict("cdsgd", sc, k).iteration_s, 0.05 + 0.8 * 0.004, 1e-12);
}

TEST(CodecCost, MeasuresTheWorkersVelocityAndEveryRingCall) {
  // A 2-D weight (16 x 64) and two 1-D parameters, which every codec sends raw (raw_1d), each
  // in a ring allreduce of its own.
  const std::vector<std::size_t> numels = {1024, 16, 64};
  const std::vector<std::vector<std::int64_t>> shapes = {{16, 64}, {16}, {64}};
  const CodecCost topk = measure_codec_cost("topk:ratio=0.1", numels, shapes);
  EXPECT_EQ(topk.ring_calls, 2);
  EXPECT_EQ(topk.ring_bytes, 4.0 * (16 + 64));
  EXPECT_GT(topk.momentum_s, 0);  // a sparsifier keeps the momentum on the worker
  EXPECT_GT(topk.allgather_encode_s, 0);
  EXPECT_LE(topk.allgather_encode_s, topk.encode_s);
  EXPECT_LE(topk.allgather_decode_s, topk.decode_s);
  // PowerSGD keeps the momentum on the aggregate and sums P and Q of the weight: 2 + 2 calls.
  const CodecCost power = measure_codec_cost("powersgd", numels, shapes);
  EXPECT_EQ(power.momentum_s, 0);
  EXPECT_EQ(power.ring_calls, 4);
  EXPECT_EQ(power.allgather_bytes, 0);
  // Flat tensors (no shapes): no 1-D parameter to send raw, nothing in a ring.
  EXPECT_EQ(measure_codec_cost("topk:ratio=0.1", numels, {}).ring_calls, 0);
}

TEST(CodecCost, RefusesABadSpecNamingIt) {
  const std::vector<std::size_t> numels = {1000, 64};
  try {
    measure_codec_cost("topk:ratio=2", numels, {});
    FAIL() << "accepted topk:ratio=2";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("ratio"), std::string::npos) << e.what();
  }
  EXPECT_THROW(measure_codec_cost("twobit:nosuch=1", numels, {}), InvalidArgument);
}

}  // namespace
}  // namespace ferry::advise
