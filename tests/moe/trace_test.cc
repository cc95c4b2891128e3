// Routing-trace readers and policy replay on the real traces of ../shared/data/moe-traces
// (skipped when the folder is absent).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <list>
#include <set>

#include <gtest/gtest.h>

#include "core/error.h"
#include "moe/engine/trace_recorder.h"
#include "moe/sched/policy.h"
#include "moe/trace/routing_stats.h"
#include "moe/trace/routing_trace.h"
#include "moe/sched/trace_replay.h"
#include "moe_test_util.h"

namespace ferry::moe {
namespace {

std::string trace_path(const std::string& rel) {
  std::string dir = find_shared_traces_dir();
  if (dir.empty()) return "";
  std::string p = (std::filesystem::path(dir) / rel).string();
  return std::filesystem::exists(p) ? p : "";
}

// Per-layer LRU of `cap` experts, written independently of the policy code: per (token, layer)
// in decode order, experts already cached are hits and become most recent (ascending expert
// order); misses enter, evicting the least recently used expert not needed by this layer now.
double independent_lru_hit_rate(const RoutingTrace& t, std::size_t cap) {
  std::vector<std::list<int>> lru(t.num_layers);  // front = most recent
  std::uint64_t hits = 0, total = 0;
  for (const auto& tok : t.tokens) {
    for (int l = 0; l < t.num_layers; ++l) {
      std::vector<int> need = tok.experts[l];
      std::sort(need.begin(), need.end());
      need.erase(std::unique(need.begin(), need.end()), need.end());
      auto& cache = lru[l];
      for (int e : need) {
        ++total;
        hits += std::find(cache.begin(), cache.end(), e) != cache.end();
      }
      for (int e : need) {  // every needed expert becomes most recent, in ascending order
        cache.remove(e);
        cache.push_front(e);
      }
      while (cache.size() > cap) {
        auto victim = std::find_if(cache.rbegin(), cache.rend(), [&](int e) {
          return std::find(need.begin(), need.end(), e) == need.end();
        });
        cache.erase(std::next(victim).base());
      }
    }
  }
  return static_cast<double>(hits) / static_cast<double>(total);
}

TEST(Traces, MixtralLruHitRateMatchesIndependentComputation) {
  const std::string path = trace_path("mixtral-8x7b/gsm8k.jsonl");
  if (path.empty()) GTEST_SKIP() << "../shared/data/moe-traces absent";
  auto t = read_mixtral_trace(path);
  EXPECT_EQ(t.num_layers, 32);
  EXPECT_EQ(t.num_experts, 8);
  EXPECT_EQ(t.top_k, 2);
  EXPECT_EQ(t.tokens.size(), 244u);
  register_builtin_policies();
  auto lru = make_policy("lru:scope=layer");
  ReplayOptions ro;
  ro.capacity_experts = 4 * 32;  // 4 of 8 experts per layer
  auto r = replay_trace(t, *lru, ro);
  const double expect = independent_lru_hit_rate(t, 4);
  EXPECT_NEAR(r.hit_rate(), expect, 1e-12);
  EXPECT_NEAR(r.hit_rate(), 0.60, 0.03) << "README reports 0.60 for LRU with C=4";
  EXPECT_LE(r.peak_experts, ro.capacity_experts);

  auto ondemand = make_policy("ondemand");
  EXPECT_EQ(replay_trace(t, *ondemand, ro).hits, 0u);
  auto lru_all = make_policy("lru");
  ro.capacity_experts = 8 * 32;
  auto all = replay_trace(t, *lru_all, ro);
  std::set<std::pair<int, int>> distinct;
  for (const auto& tok : t.tokens)
    for (int l = 0; l < t.num_layers; ++l)
      for (int e : tok.experts[l]) distinct.insert({l, e});
  EXPECT_EQ(all.loads, distinct.size()) << "with room for every expert each is loaded once";
}

TEST(Traces, GraniteAndLayer0Readers) {
  const std::string g = trace_path("granite-3.0-1b-a400m/trace.json");
  if (g.empty()) GTEST_SKIP() << "../shared/data/moe-traces absent";
  auto t = read_routing_trace(g);
  EXPECT_EQ(t.num_layers, 24);
  EXPECT_EQ(t.num_experts, 32);
  EXPECT_EQ(t.top_k, 8);
  std::size_t decode = 0;
  for (const auto& tok : t.tokens) decode += !tok.prefill;
  EXPECT_EQ(decode, 3u * 64u);
  for (const char* f : {"layer0/qwen1.5-moe-a2.7b.jsonl", "layer0/olmoe-1b-7b.jsonl"}) {
    auto l0 = read_routing_trace(trace_path(f));
    EXPECT_EQ(l0.num_layers, 1) << f;
    EXPECT_GT(l0.tokens.size(), 1000u) << f;
    EXPECT_EQ(l0.top_k, std::string(f).find("qwen") != std::string::npos ? 4 : 8);
    EXPECT_LE(l0.num_experts, 64);
  }
  auto mix = read_routing_trace(trace_path("mixtral-8x7b/gsm8k.jsonl"));
  EXPECT_EQ(mix.num_layers, 32);
}

TEST(Traces, MalformedTraceNamesFileAndLine) {
  testing::TempDir dir;
  std::ofstream(dir / "bad.jsonl") << R"({"problem_id": 0, "layer": 0, "token_idx": 0, "experts": [1, 2]})" << "\n"
                                   << R"({"problem_id": 0, "layer": "x", "token_idx": 1, "experts": [1]})" << "\n";
  try {
    read_routing_trace(dir / "bad.jsonl");
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(read_routing_trace(dir / "absent.jsonl"), IoError);
  // A token routed twice to one expert, and gate probabilities outside [0, 1], are refused naming
  // the line (they were read as given and counted twice).
  const std::pair<const char*, const char*> bad[] = {
      {R"({"problem_id": 0, "layer": 0, "token_idx": 0, "experts": [3, 3], "gating_probs": [0.5, 0.5]})",
       "expert 3 appears twice"},
      {R"({"problem_id": 0, "layer": 0, "token_idx": 0, "experts": [1, 2], "gating_probs": [1.5, -0.5]})",
       "holds 1.5: gate probabilities are numbers in [0, 1]"},
      {R"({"problem_id": 0, "layer": 0, "token_idx": 0, "experts": [1, 2], "gating_probs": [0.5, -0.01]})",
       "holds -0.01"},
  };
  for (const auto& [line, want] : bad) {
    std::ofstream(dir / "one.jsonl") << line << "\n";
    try {
      read_routing_trace(dir / "one.jsonl");
      ADD_FAILURE() << "accepted: " << line;
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("line 1"), std::string::npos) << e.what();
    }
  }
}

TEST(Traces, RecordedTraceReadsBackInTheMixtralFormat) {
  testing::TempDir dir;
  TinyModelOptions o;
  o.config = testing::tiny_config();
  make_tiny_model(dir / "model", o);
  std::vector<std::vector<std::int32_t>> seqs = {{1, 2, 3, 4, 5, 6}, {9, 8, 7, 6, 5, 4, 3}};
  auto mem = record_routing(dir / "model", seqs, dir / "t.jsonl", "unit");
  auto back = read_routing_trace(dir / "t.jsonl");
  ASSERT_EQ(back.tokens.size(), 13u);
  EXPECT_EQ(back.num_layers, 3);
  EXPECT_EQ(back.top_k, 2);
  for (std::size_t i = 0; i < back.tokens.size(); ++i)
    for (int l = 0; l < 3; ++l) EXPECT_EQ(back.tokens[i].experts[l], mem.tokens[i].experts[l]) << i << " " << l;
  // Side file: 32-byte header + one float32 row of hidden_size per JSONL row.
  EXPECT_EQ(std::filesystem::file_size(dir / "t.jsonl.hidden.bin"), 32u + 13u * 3u * 32u * 4u);
  auto s = routing_stats(mem);
  EXPECT_NEAR(s.random_precision, 0.25, 1e-12);
  EXPECT_GT(s.load_entropy, 0.0);
}

}  // namespace
}  // namespace ferry::moe
