#include <gtest/gtest.h>

#include <algorithm>

#include <cmath>

#include "advise/cost_model.h"
#include "advise/queueing.h"
#include "test_models.h"

namespace ferry::advise {
namespace {

using testing::scenario;
using testing::synthetic_model;
using train::Topology;

TEST(NetworkModel, RingAllreduceMatchesHandComputedValue) {
  // n = 4, S = 4 MB, B = 1 GB/s, alpha = 50 us, o = 10 us: 2(n-1) = 6 steps of 1 MB.
  const LinkModel l{1e9, 50e-6, 10e-6};
  EXPECT_NEAR(ring_allreduce_s(l, 4, 4e6), 6 * (1e-3 + 60e-6), 1e-12);
  EXPECT_EQ(ring_allreduce_s(l, 1, 4e6), 0);
  // n = 3, S = 3e6: 4 steps of 1e6 bytes.
  EXPECT_NEAR(ring_allreduce_s(l, 3, 3e6), 4 * (1e-3 + 60e-6), 1e-12);
}

TEST(NetworkModel, AllgatherAndTreeMatchHandComputedValues) {
  const LinkModel l{1e9, 50e-6, 0};
  EXPECT_NEAR(ring_allgather_s(l, 5, 2e6), 4 * (2e-3 + 50e-6), 1e-12);
  // 8 ranks: depth 3, reduce and broadcast: 6 transfers of the whole buffer.
  EXPECT_NEAR(tree_allreduce_s(l, 8, 1e6), 6 * (1e-3 + 50e-6), 1e-12);
  EXPECT_NEAR(tree_allreduce_s(l, 5, 1e6), 6 * (1e-3 + 50e-6), 1e-12);  // depth ceil(log2 5) = 3
}

TEST(NetworkModel, ParameterServerIncast) {
  const LinkModel l{1e8, 1e-4, 0};
  // 4 workers into 1 server: the server's ingress takes 4 pushes of 1 MB at 100 MB/s.
  EXPECT_NEAR(ps_push_s(l, 4, 1, 1e6), 4 * 1e-2 + 1e-4, 1e-12);
  // 2 workers into 4 servers: each worker's own NIC (1 MB) is the bound, not a server's 0.5 MB.
  EXPECT_NEAR(ps_push_s(l, 2, 4, 1e6), 1e-2 + 1e-4, 1e-12);
  EXPECT_NEAR(ps_pull_s(l, 8, 2, 1e6), 4 * 1e-2 + 1e-4, 1e-12);
}

TEST(NetworkModel, NoBandwidthMeansNoWireTime) {
  const LinkModel l{0, 0, 0};
  EXPECT_EQ(ring_allreduce_s(l, 4, 1e9), 0);
  EXPECT_EQ(ps_push_s(l, 4, 1, 1e9), 0);
}

// Every algorithm on every topology it supports.
std::vector<std::pair<std::string, Topology>> every_algorithm() {
  train::register_builtin_strategies();
  std::vector<std::pair<std::string, Topology>> out;
  for (const auto& name : train::strategy_names())
    for (auto t : train::strategy_info(name).topologies) out.emplace_back(name, t);
  return out;
}

TEST(CostModel, EveryStrategyHasACostModel) {
  for (const auto& name : train::strategy_names()) EXPECT_NE(find_algorithm_cost(name), nullptr) << name;
}

TEST(CostModel, InfinitelyFastLinkCostsComputeOnly) {
  const ModelProfile m = synthetic_model("m", {1000, 20000, 300, 5000}, 0.010, 0.020, 0.002);
  MachineConstants k;
  k.cores = 64;  // every rank on its own core: no contention
  for (const auto& [algo, topo] : every_algorithm()) {
    for (int n : {1, 2, 4, 7}) {
      Scenario sc = scenario(m, n, 2, topo, 0, 0);
      const Prediction p = predict(algo, sc, k);
      EXPECT_NEAR(p.iteration_s, m.compute_s(64), 1e-12) << algo << " n=" << n;
    }
  }
}

TEST(CostModel, InfinitelyFastLinkAddsOnlyTheCodecTime) {
  const ModelProfile m = synthetic_model("m", {1000, 20000}, 0.010, 0.020);
  MachineConstants k;
  k.cores = 64;
  Scenario sc = scenario(m, 4, 1, Topology::kParameterServer, 0, 0);
  sc.codec.compressed = true;
  sc.codec.spec = "synthetic";
  sc.codec.push_bytes = 1000;
  sc.codec.encode_s = 0.003;
  sc.codec.decode_s = 0.001;
  // S-SGD on the PS: encode on the critical path, then the servers decode 4 payloads (1 server).
  EXPECT_NEAR(predict("ssgd", sc, k).iteration_s, 0.030 + 0.003 + 4 * 0.001, 1e-12);
  // CD-SGD compresses on the communication thread: off the critical path, still compute-bound.
  EXPECT_NEAR(predict("cdsgd", sc, k).iteration_s, 0.030, 1e-12);
}

TEST(Queueing, MeanValueAnalysisByHand) {
  // One job: no queueing, the cycle is the think time plus every demand.
  EXPECT_DOUBLE_EQ(mva_cycle_s(1, {0.2, 0.3}, 1.0), 1.5);
  // Two jobs, one station of 1 s, think 1 s: m = 1: R = 1, X = 1/2, Q = 1/2;
  // m = 2: R = 1 (1 + 1/2) = 1.5, X = 2 / (1 + 1.5) = 0.8, cycle = 2 / 0.8 = 2.5.
  EXPECT_DOUBLE_EQ(mva_cycle_s(2, {1.0}, 1.0), 2.5);
  // Many jobs: the bottleneck station serves one at a time, cycle -> jobs x its demand.
  EXPECT_NEAR(mva_cycle_s(200, {0.5, 0.1}, 1.0) / 200, 0.5, 0.5 / 200 * 3);
}

TEST(CostModel, ParameterServerRoundByHand) {
  // One tensor of 250 000 floats (S = 1 MB), 4 workers, 1 server, 100 MB/s, no latency, 4 cores:
  // push = pull = 4 S / B = 40 ms; eta = 0.25 hides a quarter of the smaller direction:
  // wire = 40 + 0.75 * 40 = 70 ms. The server's CPU, n (kappa (S + S)) + 3 n K o =
  // 4 * 2e6 * 5e-9 + 12 * 1e-4 = 41.2 ms, runs under it; with kappa 20 ns it is 161.2 ms and
  // the round takes that instead.
  const ModelProfile m = synthetic_model("m", {250000}, 0.004, 0.006);
  MachineConstants k;
  k.cores = 4;
  k.ps_overlap = 0.25;
  k.cpu_s_per_byte = 5e-9;
  k.message_s = 1e-4;
  const Scenario sc = scenario(m, 4, 1, Topology::kParameterServer, 1e8, 0);
  const CostContext x(sc, k);
  EXPECT_NEAR(x.ps_round_s(1e6, 0, 1e6, 1), 0.070, 1e-12);
  k.cpu_s_per_byte = 20e-9;
  EXPECT_NEAR(CostContext(sc, k).ps_round_s(1e6, 0, 1e6, 1), 0.1612, 1e-12);
  // S-SGD on the PS: compute (10 ms, 4 ranks on 4 cores) plus the round (the copies on the
  // workers are part of the servers' term).
  k.cpu_s_per_byte = 5e-9;
  EXPECT_NEAR(predict("ssgd", sc, k).iteration_s, 0.010 + 0.070, 1e-12);
}

TEST(CostModel, AsgdWithOneWorkerIsItsOwnChainAndQueuesWithMore) {
  // One worker: no queueing, T = c + S_p/B + S/B + the server's work + the worker's copies.
  const ModelProfile m = synthetic_model("m", {250000}, 0.004, 0.006);
  MachineConstants k;
  k.cores = 64;
  k.cpu_s_per_byte = 1e-9;
  const Scenario one = scenario(m, 1, 1, Topology::kParameterServer, 1e8, 0);
  EXPECT_NEAR(predict("asgd", one, k).iteration_s, 0.010 + 0.010 + 0.010 + 2e6 * 1e-9 + 2e6 * 1e-9, 1e-12);
  // Many workers: the servers' NIC (10 ms a push) serves one at a time, T -> n * 10 ms.
  const Scenario many = scenario(m, 64, 1, Topology::kParameterServer, 1e8, 0);
  const double t = predict("asgd", many, k).iteration_s;
  EXPECT_GT(t, 64 * 0.010);
  EXPECT_LT(t, 64 * 0.010 * 1.1);
}

TEST(CostModel, SsgdIsNeverFasterThanComputeOnly) {
  const ModelProfile m = synthetic_model("m", {400000, 20000, 1280}, 0.012, 0.020, 0.001);
  MachineConstants k;
  k.cores = 2;
  k.compute_scale = 1.3;
  k.cpu_s_per_byte = 5e-10;
  k.message_s = 50e-6;
  k.ps_overlap = 0.4;
  for (double bw : {12.5e6, 125e6, 1.25e9, 1.25e10})
    for (int n : {1, 2, 4, 8})
      for (auto topo : {Topology::kAllreduce, Topology::kParameterServer}) {
        Scenario sc = scenario(m, n, 1, topo, bw);
        const double co = predict("compute-only", scenario(m, n, 0, Topology::kAllreduce, bw), k).samples_per_s;
        const Prediction s = predict("ssgd", sc, k);
        EXPECT_LE(s.samples_per_s, co * (1 + 1e-12)) << bw << " " << n;
        EXPECT_GE(s.comm_fraction, 0);
        EXPECT_LE(s.comm_fraction, 1);
      }
}

TEST(CostModel, SlowerLinkNeverHelps) {
  const ModelProfile m = synthetic_model("m", {400000, 20000, 1280, 300}, 0.012, 0.020);  // 4 tensors: streaming-diloco's 4 fragments
  MachineConstants k;
  k.message_s = 20e-6;
  for (const auto& [algo, topo] : every_algorithm()) {
    double prev = 1e300;
    for (double bw : {1.25e10, 1.25e9, 1.25e8, 1.25e7}) {
      const double sps = predict(algo, scenario(m, 4, 1, topo, bw), k).samples_per_s;
      EXPECT_LE(sps, prev * (1 + 1e-12)) << algo << " at " << bw;
      prev = sps;
    }
  }
}

TEST(CostModel, WfbpWithOneBucketIsSsgd) {
  const ModelProfile m = synthetic_model("m", {1000, 20000, 300}, 0.010, 0.020);
  MachineConstants k;
  for (auto topo : {Topology::kAllreduce, Topology::kParameterServer}) {
    Scenario sc = scenario(m, 4, 1, topo, 1.25e8);
    // everything in one bucket
    EXPECT_NEAR(predict("wfbp:bucket_mb=100", sc, k).iteration_s, predict("ssgd", sc, k).iteration_s, 1e-12);
    // one bucket per tensor: overlap can only help
    EXPECT_LE(predict("wfbp:bucket_mb=0.001", sc, k).iteration_s, predict("ssgd", sc, k).iteration_s + 1e-12);
  }
}

TEST(CostModel, DelayedPullsEveryKStepsSendFewerBytes) {
  const ModelProfile m = synthetic_model("m", {400000}, 0.010, 0.020);
  MachineConstants k;
  Scenario sc = scenario(m, 4, 1, Topology::kParameterServer, 1.25e7);
  const double od = predict("odsgd", sc, k).samples_per_s;
  const double ssd = predict("ssdsgd:delay_steps=4", sc, k).samples_per_s;
  EXPECT_GE(ssd, od);
  // Warm-up: a run whose every iteration is warm-up is S-SGD's.
  sc.steps = 10;
  EXPECT_NEAR(predict("ssdsgd:warmup_steps=10", sc, k).samples_per_s, predict("ssgd", sc, k).samples_per_s, 1e-9);
}

TEST(CostModel, LocalSgdAveragesEveryH) {
  const ModelProfile m = synthetic_model("m", {1000000}, 0.010, 0.020);
  MachineConstants k;
  k.cores = 64;
  Scenario sc = scenario(m, 4, 0, Topology::kAllreduce, 1.25e8, 0);
  // T = c + AR(S)/H with AR = 6 steps of 1 MB at 125 MB/s.
  EXPECT_NEAR(predict("localsgd:sync_every=4", sc, k).iteration_s, 0.030 + 6 * 8e-3 / 4, 1e-12);
  EXPECT_NEAR(predict("localsgd:sync_every=2", sc, k).iteration_s, 0.030 + 6 * 8e-3 / 2, 1e-12);
}

// Streaming DiLoCo waits, per fragment, for the part of its exchange that its τ inner steps do not
// hide, and a fragment is as large as the strategy cuts it (whole tensors): with equal tensors the
// P fragments are S/P each; with one dominant tensor the fragment holding it waits almost as long
// as DiLoCo's whole exchange.
TEST(CostModel, StreamingDilocoWaitsForEachFragmentAsTheStrategyCutsIt) {
  MachineConstants k;
  k.cores = 64;
  for (const std::vector<std::size_t>& numels :
       {std::vector<std::size_t>{250000, 250000, 250000, 250000}, std::vector<std::size_t>{997000, 1000, 1000, 1000}}) {
    const ModelProfile m = synthetic_model("m", numels, 0.010, 0.020);
    Scenario sc = scenario(m, 4, 0, Topology::kAllreduce, 1.25e6, 0);
    const Prediction whole = predict("diloco:inner_steps=8", sc, k);
    const double c = predict("compute-only", sc, k).iteration_s;  // c st
    const double exchange = (whole.iteration_s - c) * 8;            // T = c st + E/H
    ASSERT_GT(exchange, 4 * c);  // the slow link: a fragment's exchange is longer than τ steps
    double wait = 0;
    for (std::size_t e : numels) wait += std::max(0.0, static_cast<double>(e) / 1e6 * exchange - c);
    EXPECT_NEAR(predict("streaming-diloco:inner_steps=8,fragments=4,overlap=1", sc, k).iteration_s, c + wait / 8, 1e-12);
  }
}

TEST(CostModel, RefusesWhatAStrategyCannotRun) {
  const ModelProfile m = synthetic_model("m", {1000}, 0.010, 0.020);
  MachineConstants k;
  EXPECT_THROW(predict("nosuch", scenario(m, 4, 1, Topology::kParameterServer, 1e8), k), InvalidArgument);
  EXPECT_THROW(predict("localsgd", scenario(m, 4, 1, Topology::kParameterServer, 1e8), k), InvalidArgument);
  Scenario sc = scenario(m, 4, 0, Topology::kAllreduce, 1e8);
  sc.codec.compressed = true;
  EXPECT_THROW(predict("localsgd", sc, k), InvalidArgument);
  EXPECT_THROW(predict("ssgd", scenario(m, 0, 1, Topology::kAllreduce, 1e8), k), InvalidArgument);
}

}  // namespace
}  // namespace ferry::advise
