#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <numeric>
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

struct PsSetup {
  int workers;
  int servers;
  ServerMode mode;
};

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
      KVServer server(&c, &layout, c.rank() - s.workers, o);
      server.run();
      return;
    }
    KVWorker kv(&c, &layout, s.workers);
    std::vector<float> w(layout.total_elements());
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = 0.001f * i;
    if (c.rank() == 0) kv.init(w);
    kv.pull_all(w, 0).wait();
    std::vector<float> g(w.size());
    for (int t = 0; t < steps; ++t) {
      for (std::size_t i = 0; i < g.size(); ++i) g[i] = grad_of(c.rank(), t, i);
      // Later ranks push first, so pushes reach the servers out of worker order.
      std::this_thread::sleep_for(std::chrono::milliseconds(2 * (s.workers - 1 - c.rank())));
      kv.push_all(g).wait();
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

}  // namespace
}  // namespace ferry::ps
