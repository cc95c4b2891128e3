// The simulator against the engine: given the same routing (the engine replaying a trace's
// routing in place of its routers'), the same device capacity in experts and the same link, both
// count the same expert accesses, hits, demand loads and bytes moved. Also: the replay really
// replaces the routers' choice, a trace that does not fit the model is refused, and the engine's
// policy / predictor time counters are filled.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

#include "core/error.h"
#include "moe/engine/engine.h"
#include "moe/engine/generate.h"
#include "moe/predict/predictor_registry.h"
#include "moe/sim/simulator.h"
#include "random_trace.h"
#include "moe_test_util.h"

namespace ferry::moe {
namespace {

using testing::TempDir;

// Routing with the tiny model's shape (testing::random_trace).
RoutingTrace random_trace(const MoeConfig& c, std::uint32_t seed, int tokens, int sequences) {
  return testing::random_trace(seed, c.num_layers, c.num_experts, c.top_k, tokens, sequences);
}

// The tiny model as the simulator sees it: same layers, experts, top-k and expert bytes (fp32).
ModelShape tiny_shape(const MoeConfig& c) {
  ModelShape s;
  s.name = "tiny";
  s.layers = c.num_layers;
  s.experts = c.num_experts;
  s.top_k = c.top_k;
  s.hidden = c.hidden_size;
  s.ffn = c.intermediate_size;
  s.heads = c.num_heads;
  s.kv_heads = c.num_kv_heads;
  s.head_dim = c.head_dim;
  s.vocab = c.vocab_size;
  s.bytes_per_param = 4;
  s.expert_format = quant::QuantType::kF32;  // the engine's host pool: float32 experts
  return s;
}

// The engine's link and compute profile below: link 25 GB/s + 10 us, device expert call 100 us
// (the launch term; memory and FLOPs are made negligible), host 1 ms per token for the tiny
// model's 18 KiB expert. Policies weigh the same costs in both.
HardwareProfile link_profile() {
  HardwareProfile h;
  h.name = "test";
  h.device_mem_bytes = 1ull << 30;
  h.launch_s = 100e-6;
  h.hbm_Bps = 1e15;
  h.tensor_flops = 1e18;
  h.link_Bps = 25e9;
  h.link_latency_s = 10e-6;
  h.host_Bps = static_cast<double>(tiny_shape(testing::tiny_config()).expert_bytes()) / 1e-3;
  h.host_flops = 1e15;
  return h;
}
constexpr const char* kLink = "25GBps,10us";
constexpr const char* kCompute = "100us,1ms";

PolicyInputs options_for(const std::string& policy) {
  PolicyInputs o;
  if (policy == "prescope")  // a routing-only predictor: the same predictions with and without hidden states
    o.predictor = [](const PolicyContext& ctx) {
      register_builtin_predictors();
      return make_predictor("cooccurrence", PredictorContext{nullptr, ctx.num_layers, ctx.num_experts, ctx.top_k});
    };
  return o;
}

class SimEngine : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    TinyModelOptions o;
    o.config = testing::tiny_config();
    o.seed = 5;
    make_tiny_model(dir_->path(), o);
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static TempDir* dir_;

  struct Counts {
    std::uint64_t accesses = 0, hits = 0, loads = 0, host_execs = 0, bytes_moved = 0, prefetches = 0;
  };

  // The engine replaying `trace` at batch B: one decode step per trace token, after a reset.
  static Counts run_engine(const RoutingTrace& trace, const std::string& policy, int batch, std::uint64_t capacity,
                           EngineStats* stats_out = nullptr) {
    EngineOptions eo;
    eo.policy = policy;
    eo.policy_inputs = options_for(policy);
    eo.link = kLink;
    eo.compute = kCompute;
    eo.forced_routing = &trace;
    auto probe = MoeEngine::open(dir_->path(), EngineOptions{});
    eo.device_mem = std::to_string(capacity * probe->expert_bytes());
    probe.reset();
    auto eng = MoeEngine::open(dir_->path(), eo);
    eng->reset();
    eng->reset_stats();
    std::mt19937 rng(11);
    for (std::size_t s = 0; s < trace.tokens.size(); ++s) {
      TokenBatch step(batch, std::vector<std::int32_t>(1));
      for (auto& row : step) row[0] = static_cast<std::int32_t>(rng() % eng->config().vocab_size);
      eng->forward(step);
    }
    const EngineStats s = eng->stats();
    if (stats_out) *stats_out = s;
    return Counts{s.expert_accesses, s.hits, s.store.loads, s.host_execs, s.store.bytes_moved, s.store.prefetches};
  }

  static Counts run_sim(const RoutingTrace& trace, const std::string& policy, int batch, std::uint64_t capacity) {
    register_builtin_policies();
    const MoeConfig c = testing::tiny_config();
    TimeModel tm(link_profile(), tiny_shape(c), 64);
    const FutureRouting f = form_batches(trace, batch);
    auto p = make_policy(policy, options_for(policy));
    SimOptions so;
    so.batch = batch;
    so.capacity_experts = capacity;
    const SimResult r = simulate(f, *p, tm, so);
    return Counts{r.accesses, r.hits, r.loads, r.host_execs, r.bytes_moved, r.prefetches};
  }
};
TempDir* SimEngine::dir_ = nullptr;

TEST_F(SimEngine, ShapesAgree) {
  auto eng = MoeEngine::open(dir_->path(), EngineOptions{});
  EXPECT_EQ(eng->expert_bytes(), static_cast<std::uint64_t>(tiny_shape(eng->config()).expert_bytes()));
}

// Demand-only policies are decided by the routing and the cache contents alone: every count is
// equal. Capacities stay at or above the distinct experts of one layer's step (top_k x batch):
// below that the engine defers a load until the layer's other experts are done, where the
// simulator runs the expert on the host, by design.
TEST_F(SimEngine, DemandPoliciesAgreeExactly) {
  const MoeConfig c = testing::tiny_config();
  const RoutingTrace trace = random_trace(c, 7, 20, 2);
  const std::uint64_t eb = static_cast<std::uint64_t>(tiny_shape(c).expert_bytes());
  struct Case {
    int batch;
    std::uint64_t capacity;
  };
  for (const std::string policy : {"ondemand", "lru"})
    for (Case k : {Case{1, 2}, Case{1, 5}, Case{1, 12}, Case{4, 8}, Case{4, 13}, Case{4, 24}}) {
      SCOPED_TRACE(policy + " batch " + std::to_string(k.batch) + " capacity " + std::to_string(k.capacity));
      const Counts e = run_engine(trace, policy, k.batch, k.capacity);
      const Counts s = run_sim(trace, policy, k.batch, k.capacity);
      EXPECT_EQ(e.accesses, s.accesses);
      EXPECT_EQ(e.hits, s.hits);
      EXPECT_EQ(e.loads, s.loads);
      EXPECT_EQ(e.host_execs, s.host_execs);
      EXPECT_EQ(e.bytes_moved, s.bytes_moved);
      EXPECT_EQ(e.bytes_moved, e.loads * eb);  // no prefetch, nothing cancelled
      EXPECT_EQ(e.prefetches, 0u);
      if (k.capacity >= static_cast<std::uint64_t>(c.num_layers * c.num_experts)) {
        EXPECT_EQ(s.loads, s.accesses - s.hits);  // everything fits: each expert loads once
      }
      EXPECT_GT(e.accesses, e.hits);  // the trace is not trivially resident
    }
}

// PreScope's choices depend on time: whether a prefetch has arrived when a victim is chosen (done
// experts leave before moving ones) or is cut short by an eviction (partial bytes) is real time in
// the engine — the I/O thread, on a loaded machine — and modelled time in the simulator. With a
// transfer (10.7 us) far below an expert call (100 us) the two counted the same hits, loads and
// bytes on every run we made, but a stalled I/O thread may legitimately change them, so only what
// the routing alone decides is asserted: the accesses, and that hits and host runs never exceed them.
TEST_F(SimEngine, PreScopeSeesTheSameAccesses) {
  const MoeConfig c = testing::tiny_config();
  const RoutingTrace trace = random_trace(c, 9, 16, 2);
  for (int batch : {1, 4}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    const std::uint64_t capacity = 2 * c.top_k * batch;
    const Counts e = run_engine(trace, "prescope", batch, capacity);
    const Counts s = run_sim(trace, "prescope", batch, capacity);
    EXPECT_EQ(e.accesses, s.accesses);
    if (batch == 1) {  // one token per step: top_k distinct experts per layer
      EXPECT_EQ(e.accesses, trace.tokens.size() * static_cast<std::uint64_t>(c.num_layers * c.top_k));
    }
    EXPECT_LE(e.hits + e.host_execs, e.accesses);
    EXPECT_LE(s.hits + s.host_execs, s.accesses);
  }
}

TEST_F(SimEngine, ReplayReplacesTheRouters) {
  const MoeConfig c = testing::tiny_config();
  const RoutingTrace trace = random_trace(c, 3, 6, 1);
  EngineOptions eo;
  eo.forced_routing = &trace;
  auto eng = MoeEngine::open(dir_->path(), eo);
  int step = 0, mismatches = 0, seen = 0;
  eng->set_route_observer([&](int layer, int n, int k, const std::int64_t* experts, const float* weights, const float*,
                              int) {
    ASSERT_EQ(n, 1);
    for (int i = 0; i < k; ++i) {
      ++seen;
      mismatches += experts[i] != trace.tokens[step].experts[layer][i];
      mismatches += weights[i] != trace.tokens[step].weights[layer][i];
    }
    if (layer == c.num_layers - 1) ++step;
  });
  eng->reset();
  for (std::size_t s = 0; s < trace.tokens.size(); ++s) eng->forward({{static_cast<std::int32_t>(s)}});
  EXPECT_EQ(seen, static_cast<int>(trace.tokens.size()) * c.num_layers * c.top_k);
  EXPECT_EQ(mismatches, 0);
}

// Routing replay through step(): each sequence walks the trace from its routing offset, one token
// per position, whatever else shares the step (a lock-step batch is the same path).
TEST_F(SimEngine, ReplayDrivesContinuousSequences) {
  const MoeConfig c = testing::tiny_config();
  const RoutingTrace trace = random_trace(c, 5, 7, 1);
  const std::size_t N = trace.tokens.size();
  EngineOptions eo;
  eo.forced_routing = &trace;
  auto eng = MoeEngine::open(dir_->path(), eo);
  std::vector<std::size_t> expect;  // the trace token of each row of the current step
  int mismatches = 0, seen = 0;
  eng->set_route_observer([&](int layer, int n, int k, const std::int64_t* experts, const float* weights, const float*,
                              int) {
    ASSERT_EQ(static_cast<std::size_t>(n), expect.size());
    for (int t = 0; t < n; ++t)
      for (int i = 0; i < k; ++i) {
        ++seen;
        mismatches += experts[t * k + i] != trace.tokens[expect[t]].experts[layer][i];
        mismatches += weights[t * k + i] != trace.tokens[expect[t]].weights[layer][i];
      }
  });
  const int a = eng->open_sequence({0, 0}), b = eng->open_sequence({0, 5});
  expect = {0, 1, 2, 5};  // a: positions 0-2 from offset 0; b: position 0 from offset 5
  eng->step({{a, {1, 2, 3}}, {b, {4}}});
  expect = {6, 0, 3};     // b: positions 1-2 wrap around the trace's 7 tokens; a: position 3
  eng->step({{b, {5, 6}}, {a, {7}}});
  EXPECT_EQ(seen, 7 * c.num_layers * c.top_k);
  EXPECT_EQ(mismatches, 0);
  EXPECT_EQ(N, 7u);
}

// The future the oracle policies read when the engine replays a trace (replay_future): step 0 is
// every sequence's prompt, then one decode step per generated token, each layer's experts with the
// tokens routed to each, exactly as the engine routes them in generate() (observed, not assumed).
// The prompt (5 tokens) and the decode run past the trace's end, so the wrap-around is covered.
TEST_F(SimEngine, ReplayFutureIsWhatTheEngineRoutes) {
  const MoeConfig c = testing::tiny_config();
  const RoutingTrace trace = random_trace(c, 13, 4, 2);
  constexpr int kPrompt = 5, kTokens = 9;
  for (int batch : {1, 3}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    EngineOptions eo;
    eo.forced_routing = &trace;
    auto eng = MoeEngine::open(dir_->path(), eo);
    std::vector<std::vector<std::map<int, int>>> seen;  // [step][layer] expert -> tokens
    eng->set_route_observer([&](int layer, int n, int k, const std::int64_t* experts, const float*, const float*, int) {
      if (layer == 0) seen.emplace_back(c.num_layers);
      for (int i = 0; i < n * k; ++i) ++seen.back()[layer][static_cast<int>(experts[i])];
    });
    SamplingOptions so;
    so.max_new_tokens = kTokens;
    generate(*eng, TokenBatch(batch, std::vector<std::int32_t>(kPrompt, 3)), so);
    const FutureRouting f = replay_future(trace, batch, kPrompt, kTokens);
    ASSERT_EQ(seen.size(), f.steps.size());
    for (std::size_t s = 0; s < seen.size(); ++s)
      for (int l = 0; l < c.num_layers; ++l) {
        std::vector<int> experts, tokens;
        for (auto [e, n] : seen[s][l]) experts.push_back(e), tokens.push_back(n);
        EXPECT_EQ(f.steps[s][l].experts, experts) << "step " << s << " layer " << l;
        EXPECT_EQ(f.steps[s][l].tokens, tokens) << "step " << s << " layer " << l;
      }
  }
}

// On that future the policies that read it run in the engine, and change nothing but the timing.
TEST_F(SimEngine, OraclePoliciesRunOnTheReplayedFuture) {
  const MoeConfig c = testing::tiny_config();
  const RoutingTrace trace = random_trace(c, 17, 6, 2);
  constexpr int kPrompt = 4, kTokens = 8, kBatch = 2;
  const FutureRouting future = replay_future(trace, kBatch, kPrompt, kTokens);
  std::vector<std::vector<std::int32_t>> reference;
  for (const std::string policy : {"ondemand", "oracle", "prescope-perfect"}) {
    SCOPED_TRACE(policy);
    EngineOptions eo;
    eo.forced_routing = &trace;
    eo.policy = policy;
    eo.policy_inputs.future = &future;
    eo.link = kLink;
    eo.compute = kCompute;
    eo.device_mem = std::to_string(3 * c.top_k * kBatch * MoeEngine::open(dir_->path(), EngineOptions{})->expert_bytes());
    auto eng = MoeEngine::open(dir_->path(), eo);
    SamplingOptions so;
    so.max_new_tokens = kTokens;
    const auto g = generate(*eng, TokenBatch(kBatch, std::vector<std::int32_t>(kPrompt, 7)), so);
    if (reference.empty()) reference = g.new_tokens;
    EXPECT_EQ(g.new_tokens, reference);
    EXPECT_GT(eng->stats().expert_accesses, 0u);
  }
}

TEST_F(SimEngine, MismatchedTraceIsRefused) {
  const MoeConfig c = testing::tiny_config();
  RoutingTrace wrong_layers = random_trace(c, 1, 4, 1);
  wrong_layers.num_layers = c.num_layers + 1;
  EngineOptions eo;
  eo.forced_routing = &wrong_layers;
  EXPECT_THROW(MoeEngine::open(dir_->path(), eo), InvalidArgument);
  RoutingTrace bad_expert = random_trace(c, 1, 4, 1);
  bad_expert.tokens[2].experts[1][0] = c.num_experts;
  eo.forced_routing = &bad_expert;
  EXPECT_THROW(MoeEngine::open(dir_->path(), eo), InvalidArgument);
  RoutingTrace repeated = random_trace(c, 1, 4, 1);
  repeated.tokens[1].experts[0][1] = repeated.tokens[1].experts[0][0];
  eo.forced_routing = &repeated;
  EXPECT_THROW(MoeEngine::open(dir_->path(), eo), InvalidArgument);
}

// The overhead counters: a policy that predicts spends time in its predictor, inside its own time;
// one that does not has none.
TEST_F(SimEngine, PolicyAndPredictorTimeAreCounted) {
  const MoeConfig c = testing::tiny_config();
  const RoutingTrace trace = random_trace(c, 5, 12, 1);
  EngineStats ps, lru;
  run_engine(trace, "prescope", 1, 6, &ps);
  run_engine(trace, "lru", 1, 6, &lru);
  EXPECT_GT(ps.policy_s, 0.0);
  EXPECT_GT(ps.predictor_s, 0.0);
  EXPECT_LE(ps.predictor_s, ps.policy_s);
  EXPECT_GT(lru.policy_s, 0.0);
  EXPECT_EQ(lru.predictor_s, 0.0);
}

}  // namespace
}  // namespace ferry::moe
