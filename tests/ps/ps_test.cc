#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <numeric>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "comm/local/local_communicator.h"
#include "ps/key_layout.h"
#include "ps/kv_server.h"
#include "ps/kv_worker.h"
#include "ps/sgd_optimizer.h"

namespace ferry::ps {
namespace {

TEST(KeyLayout, BalancedByBytesAndSplitsLargeTensors) {
  std::vector<std::size_t> sizes = {288, 32, 18432, 64, 401408, 128, 1280, 10};
  for (int servers : {1, 2, 3, 4, 7}) {
    KeyLayout layout(sizes, servers);
    std::size_t total = std::accumulate(sizes.begin(), sizes.end(), std::size_t{0});
    std::size_t covered = 0, expect_offset = 0;
    for (const auto& k : layout.keys()) {
      EXPECT_EQ(k.offset, expect_offset);  // keys tile the flat vector in order
      expect_offset += k.length;
      covered += k.length;
    }
    EXPECT_EQ(covered, total);
    for (int s = 0; s < servers; ++s) {
      double share = static_cast<double>(layout.elements_of_server(s)) / total;
      EXPECT_NEAR(share, 1.0 / servers, 1e-4) << "server " << s << " of " << servers;
    }
    if (servers > 1) {  // the 401408-element tensor is split across servers
      std::set<int> owners;
      for (const auto& k : layout.keys())
        if (k.tensor == 4) owners.insert(k.server);
      EXPECT_GT(owners.size(), 1u);
    }
  }
}

TEST(SgdOptimizer, MatchesTheMxnetFormula) {
  SgdOptimizer opt(2, SgdOptions{0.1f, 0.9f, 0.01f, 0.5f});
  std::vector<float> w = {1.0f, -2.0f};
  std::vector<float> g = {4.0f, 2.0f};
  opt.step(w, g);  // v = -0.1*(0.5*g + 0.01*w); w += v
  EXPECT_FLOAT_EQ(w[0], 1.0f - 0.1f * (2.0f + 0.01f));
  EXPECT_FLOAT_EQ(w[1], -2.0f - 0.1f * (1.0f - 0.02f));
  float v0 = -0.1f * (2.0f + 0.01f);
  float w0 = w[0];
  opt.step(w, g);
  EXPECT_FLOAT_EQ(w[0], w0 + 0.9f * v0 - 0.1f * (2.0f + 0.01f * w0));
}

// Gradient of worker w for step t, element i: a fixed function so the test can replay it.
float grad_of(int w, int t, std::size_t i) { return std::sin(0.1f * (w + 1) * (t + 1) + 0.01f * i); }

enum class PushFault { kFine, kSkip, kNaN };

struct PsSetup {
  int workers;
  int servers;
  ServerMode mode;
  bool compressed_pulls = false;
  // Worker rank, step -> what that push carries instead of the gradient (kFine by default).
  std::function<PushFault(int, int)> fault = {};
};

// A lossy pull codec for the tests: values rounded to multiples of 1/64, sent as int16, with
// error feedback per (key, worker) as ServerOptions::pull_encoder requires.
constexpr float kPullStep = 1.0f / 64;
PullEncoder rounding_pull_encoder() {
  auto residual = std::make_shared<std::map<std::pair<int, int>, std::vector<float>>>();
  return [residual](int key, int worker, std::span<const float> change, std::vector<std::byte>& payload) {
    auto& r = (*residual)[{key, worker}];
    r.resize(change.size(), 0.0f);
    payload.resize(change.size() * sizeof(std::int16_t));
    auto* q = reinterpret_cast<std::int16_t*>(payload.data());
    for (std::size_t i = 0; i < change.size(); ++i) {
      const float v = change[i] + r[i];
      q[i] = static_cast<std::int16_t>(std::lround(v / kPullStep));
      r[i] = v - q[i] * kPullStep;
    }
  };
}
void rounding_pull_decode(int, std::span<const std::byte> payload, std::span<float> acc) {
  ASSERT_EQ(payload.size(), acc.size() * sizeof(std::int16_t));
  const auto* q = reinterpret_cast<const std::int16_t*>(payload.data());
  for (std::size_t i = 0; i < acc.size(); ++i) acc[i] += q[i] * kPullStep;
}

// Runs `steps` rounds of push/pull through the servers and returns worker 0's final weights.
std::vector<float> run_ps(PsSetup s, const std::vector<std::size_t>& sizes, int steps, SgdOptions sgd) {
  KeyLayout layout(sizes, s.servers);
  std::vector<float> result;
  comm::run_local_ranks(s.workers + s.servers, [&](comm::Communicator& c) {
    if (c.rank() >= s.workers) {
      ServerOptions o;
      o.mode = s.mode;
      o.num_workers = s.workers;
      o.sgd = sgd;
      if (s.compressed_pulls) o.pull_encoder = rounding_pull_encoder();
      KVServer server(&c, &layout, c.rank() - s.workers, o);
      server.run();
      return;
    }
    KVWorker kv(&c, &layout, s.workers);
    if (s.compressed_pulls) kv.compress_pulls(rounding_pull_decode);
    std::vector<float> w(layout.total_elements());
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = 0.001f * i;
    if (c.rank() == 0) kv.init(w);
    kv.pull_all(w, 0).wait();
    std::vector<float> g(w.size());
    for (int t = 0; t < steps; ++t) {
      for (std::size_t i = 0; i < g.size(); ++i) g[i] = grad_of(c.rank(), t, i);
      const PushFault fault = s.fault ? s.fault(c.rank(), t) : PushFault::kFine;
      if (fault == PushFault::kNaN) g[g.size() / 2] = std::nanf("");
      // Later ranks push first, so pushes reach the servers out of worker order.
      std::this_thread::sleep_for(std::chrono::milliseconds(2 * (s.workers - 1 - c.rank())));
      (fault == PushFault::kSkip ? kv.push_skip_all() : kv.push_all(g)).wait();
      kv.pull_all(w, s.mode == ServerMode::kSync ? t + 1 : 0).wait();
    }
    // Async versions count applied pushes: wait for everybody's to see the final weights.
    if (s.mode == ServerMode::kAsync) kv.pull_all(w, static_cast<std::uint64_t>(s.workers) * steps).wait();
    kv.shutdown();
    if (c.rank() == 0) result = w;
  });
  return result;
}

// The server sums a round in worker order whatever the arrival order, so the result equals the
// reference summed 0, 1, ..., N-1 bit for bit (the basis of --deterministic).
TEST(KVServer, SyncEqualsSgdOnTheMeanGradientBitForBit) {
  std::vector<std::size_t> sizes = {5, 17, 33, 2};
  SgdOptions sgd{0.05f, 0.9f, 1e-3f, 1.0f};
  const int steps = 6;
  for (PsSetup s : {PsSetup{1, 1, ServerMode::kSync}, PsSetup{3, 2, ServerMode::kSync}, PsSetup{4, 3, ServerMode::kSync}}) {
    auto got = run_ps(s, sizes, steps, sgd);
    std::vector<float> w(got.size());
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = 0.001f * i;
    SgdOptions ref_opts = sgd;
    ref_opts.rescale = 1.0f / s.workers;
    SgdOptimizer ref(w.size(), ref_opts);
    std::vector<float> g(w.size());
    for (int t = 0; t < steps; ++t) {
      std::fill(g.begin(), g.end(), 0.0f);
      for (int k = 0; k < s.workers; ++k)
        for (std::size_t i = 0; i < g.size(); ++i) g[i] += grad_of(k, t, i);
      ref.step(w, g);
    }
    for (std::size_t i = 0; i < w.size(); ++i) ASSERT_EQ(got[i], w[i]) << "element " << i << ", " << s.workers << " workers";
  }
}

// Gradients here do not depend on the weights, so the servers' weights are the same with and
// without compressed pulls; a worker's replica then differs from them by the encoder's residual,
// at most half a rounding step, while the first pull (fp32) is exact.
TEST(KVServer, CompressedPullsKeepTheReplicaWithinTheResidual) {
  std::vector<std::size_t> sizes = {5, 17, 33, 2};
  SgdOptions sgd{0.05f, 0.9f, 1e-3f, 1.0f};
  for (ServerMode mode : {ServerMode::kSync, ServerMode::kAsync}) {
    auto exact = run_ps({3, 2, mode}, sizes, 0, sgd);
    auto exact_first = run_ps({3, 2, mode, true}, sizes, 0, sgd);
    EXPECT_EQ(exact, exact_first) << "the first pull is fp32";
    if (mode == ServerMode::kAsync) continue;  // async interleavings make the weights differ
    auto plain = run_ps({3, 2, mode}, sizes, 6, sgd);
    auto coded = run_ps({3, 2, mode, true}, sizes, 6, sgd);
    ASSERT_EQ(plain.size(), coded.size());
    float worst = 0;
    for (std::size_t i = 0; i < plain.size(); ++i) {
      worst = std::max(worst, std::abs(plain[i] - coded[i]));
      // On the grid the replica walks in: the initial weights plus multiples of the step.
      const float steps = (coded[i] - 0.001f * i) / kPullStep;
      EXPECT_NEAR(steps, std::round(steps), 1e-3) << "element " << i;
    }
    EXPECT_GT(worst, 0.0f) << "rounding changed nothing: the codec was not used";
    EXPECT_LE(worst, kPullStep / 2 + 1e-6f);
  }
}

TEST(KVServer, AsyncAppliesEveryPush) {
  // Without momentum, async SGD's final weights are the initial weights minus lr/N times the sum
  // of all pushed gradients, whatever the interleaving.
  std::vector<std::size_t> sizes = {7, 9};
  SgdOptions sgd{0.1f, 0.0f, 0.0f, 1.0f};
  const int workers = 3, steps = 5;
  auto got = run_ps({workers, 2, ServerMode::kAsync}, sizes, steps, sgd);
  for (std::size_t i = 0; i < got.size(); ++i) {
    float all = 0;
    for (int k = 0; k < workers; ++k)
      for (int t = 0; t < steps; ++t) all += grad_of(k, t, i);
    EXPECT_NEAR(got[i], 0.001f * i - 0.1f / workers * all, 1e-5) << i;
  }
}

// A skip push (a worker's gradient was not finite) drops the whole sync round on every key:
// no optimizer step, so momentum does not move the weights either; a push holding a NaN drops
// the round of the key it lands in. Every other round is applied as usual.
TEST(KVServer, SyncRoundWithASkipOrNanPushAppliesNoUpdate) {
  std::vector<std::size_t> sizes = {5, 17, 33, 2};
  SgdOptions sgd{0.05f, 0.9f, 1e-3f, 1.0f};
  const int workers = 3, steps = 6;
  PsSetup s{workers, 2, ServerMode::kSync};
  s.fault = [](int rank, int t) {
    if (rank == 1 && t == 2) return PushFault::kSkip;
    if (rank == 2 && t == 4) return PushFault::kNaN;
    return PushFault::kFine;
  };
  auto got = run_ps(s, sizes, steps, sgd);
  // The NaN sits in the middle element, which belongs to one key: only that key skips round 4.
  KeyLayout layout(sizes, 2);
  const std::size_t nan_at = layout.total_elements() / 2;
  const KeyRange* nan_key = nullptr;
  for (const auto& k : layout.keys())
    if (nan_at >= k.offset && nan_at < k.offset + k.length) nan_key = &k;
  ASSERT_NE(nan_key, nullptr);
  std::vector<float> w(got.size());
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = 0.001f * i;
  SgdOptions ref_opts = sgd;
  ref_opts.rescale = 1.0f / workers;
  for (const auto& k : layout.keys()) {
    SgdOptimizer ref(k.length, ref_opts);
    std::span<float> wk(w.data() + k.offset, k.length);
    std::vector<float> g(k.length);
    for (int t = 0; t < steps; ++t) {
      if (t == 2 || (t == 4 && &k == nan_key)) continue;
      std::fill(g.begin(), g.end(), 0.0f);
      for (int r = 0; r < workers; ++r)
        for (std::size_t i = 0; i < g.size(); ++i) g[i] += grad_of(r, t, k.offset + i);
      ref.step(wk, g);
    }
  }
  for (std::size_t i = 0; i < w.size(); ++i) ASSERT_EQ(got[i], w[i]) << "element " << i;
  auto plain = run_ps({workers, 2, ServerMode::kSync}, sizes, steps, sgd);
  EXPECT_NE(plain, got) << "the faults changed nothing";
}

// Async: a skip push or a push with a NaN is dropped alone; the others are applied.
TEST(KVServer, AsyncDropsSkipAndNanPushes) {
  std::vector<std::size_t> sizes = {7, 9};
  SgdOptions sgd{0.1f, 0.0f, 0.0f, 1.0f};
  const int workers = 3, steps = 5;
  PsSetup s{workers, 2, ServerMode::kAsync};
  auto fault = [](int rank, int t) {
    if (rank == 0 && t == 1) return PushFault::kSkip;
    if (rank == 2 && t == 3) return PushFault::kNaN;
    return PushFault::kFine;
  };
  s.fault = fault;
  auto got = run_ps(s, sizes, steps, sgd);
  KeyLayout layout(sizes, 2);
  const std::size_t nan_at = layout.total_elements() / 2;
  for (const auto& k : layout.keys())
    for (std::size_t i = k.offset; i < k.offset + k.length; ++i) {
      const bool nan_key = nan_at >= k.offset && nan_at < k.offset + k.length;
      float all = 0;
      for (int r = 0; r < workers; ++r)
        for (int t = 0; t < steps; ++t) {
          const PushFault f = fault(r, t);
          if (f == PushFault::kSkip || (f == PushFault::kNaN && nan_key)) continue;
          all += grad_of(r, t, i);
        }
      EXPECT_NEAR(got[i], 0.001f * i - 0.1f / workers * all, 1e-5) << i;
    }
}

}  // namespace
}  // namespace ferry::ps
