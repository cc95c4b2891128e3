// The offloading engine against the plain reference forward: logits equal within 1e-4 for every
// policy, budget and batch; the device budget is never exceeded; impossible budgets are refused.
#include <random>

#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>

#include "core/error.h"
#include "moe/engine/bench.h"
#include "moe/engine/engine.h"
#include "moe/model/checkpoint.h"
#include "moe/model/reference_model.h"
#include "engine_test_util.h"
#include "moe_test_util.h"

namespace ferry::moe {
namespace {

using testing::TempDir;

using testing::kDecode;
using testing::kPrompt;

using testing::random_tokens;
using testing::reference_logits;
using testing::max_diff_vs;

class EngineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    torch::set_num_threads(1);
    dir_ = new TempDir();
    TinyModelOptions o;
    o.config = testing::tiny_config();
    o.seed = 11;
    make_tiny_model(dir_->path(), o);
  }
  static void TearDownTestSuite() { delete dir_; }
  static TempDir* dir_;
};
TempDir* EngineTest::dir_ = nullptr;

TEST_F(EngineTest, EveryPolicyBudgetAndBatchMatchesReference) {
  const std::uint64_t eb = 3ull * 32 * 48 * 4;
  const std::vector<std::string> budgets = {std::to_string(2 * eb), std::to_string(8 * eb), "50%", "100%"};
  for (int batch : {1, 4}) {
    auto seqs = random_tokens(batch, kPrompt + kDecode, 100 + batch);
    auto expect = reference_logits(dir_->path(), seqs);
    for (const char* policy : {"ondemand", "lru", "static-hot", "next-gate", "fiddler", "moe-infinity", "prescope",
                               "prescope:window=auto", "prescope:speculate=0", "prescope:horizon=16,predictor=cooccurrence"})
      for (const auto& budget : budgets) {
        EngineOptions o;
        o.policy = policy;
        o.device_mem = budget;
        o.link = "2GBps,5us";
        o.chunk_bytes = 4096;
        auto eng = MoeEngine::open(dir_->path(), o);
        const double diff = max_diff_vs(*eng, seqs, expect);
        EXPECT_LT(diff, 1e-4) << policy << " budget " << budget << " batch " << batch;
        auto s = eng->stats();
        EXPECT_LE(s.store.peak_bytes, s.budget_bytes) << policy << " " << budget;
        EXPECT_GT(s.expert_accesses, 0u);
        if (std::string(policy) == "ondemand") {
          EXPECT_GT(s.store.bytes_moved, 0u);
        }
      }
  }
}

TEST_F(EngineTest, RandomisedStressNeverExceedsBudget) {
  std::mt19937 rng(7);
  const char* policies[] = {"ondemand", "lru", "static-hot", "next-gate", "fiddler"};
  const std::uint64_t eb = 3ull * 32 * 48 * 4;
  for (int trial = 0; trial < 12; ++trial) {
    EngineOptions o;
    o.policy = policies[rng() % 5];
    const std::uint64_t slots = 2 + rng() % 23;
    o.device_mem = std::to_string(slots * eb + rng() % eb);  // not a multiple of the expert size
    o.link = (rng() % 2) ? "none" : "1GBps,2us";
    o.chunk_bytes = 1024 + rng() % 8192;
    if (rng() % 2) o.policy = with_policy_key(o.policy, "scope", "layer");
    const int batch = 1 + static_cast<int>(rng() % 5);
    auto seqs = random_tokens(batch, kPrompt + kDecode, 1000 + trial);
    auto expect = reference_logits(dir_->path(), seqs);
    auto eng = MoeEngine::open(dir_->path(), o);
    EXPECT_LT(max_diff_vs(*eng, seqs, expect), 1e-4) << o.policy << " slots " << slots << " batch " << batch;
    auto s = eng->stats();
    EXPECT_LE(s.store.peak_bytes, s.budget_bytes) << o.policy << " slots " << slots;
    EXPECT_LE(s.store.peak_bytes, slots * eb);
  }
}

TEST_F(EngineTest, BudgetBelowOneLayersActiveExpertsIsRefused) {
  EngineOptions o;
  o.device_mem = std::to_string(3ull * 32 * 48 * 4 + 100);  // one expert, top_k is 2
  try {
    MoeEngine::open(dir_->path(), o);
    FAIL() << "accepted a budget of one expert";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("smaller than one layer's active experts"), std::string::npos) << e.what();
  }
  o.device_mem = "0%";
  EXPECT_THROW(MoeEngine::open(dir_->path(), o), InvalidArgument);
  o.device_mem = "lots";
  EXPECT_THROW(MoeEngine::open(dir_->path(), o), InvalidArgument);
  o.device_mem = "50%";
  o.policy = "belady";
  EXPECT_THROW(MoeEngine::open(dir_->path(), o), InvalidArgument);
  o.policy = "lru";
  o.link = "fast";
  EXPECT_THROW(MoeEngine::open(dir_->path(), o), InvalidArgument);
}

TEST_F(EngineTest, OnDemandMovesEveryAccessAndAllResidentMovesNothing) {
  auto seqs = random_tokens(1, kPrompt + kDecode, 5);
  EngineOptions o;
  o.policy = "ondemand";
  o.device_mem = "100%";
  o.link = "none";
  auto eng = MoeEngine::open(dir_->path(), o);
  max_diff_vs(*eng, seqs, reference_logits(dir_->path(), seqs));
  auto s = eng->stats();
  EXPECT_EQ(s.hits, 0u);
  EXPECT_EQ(s.store.bytes_moved, s.expert_accesses * eng->expert_bytes());
  o.policy = "lru";
  o.preload = true;
  auto all = MoeEngine::open(dir_->path(), o);
  max_diff_vs(*all, seqs, reference_logits(dir_->path(), seqs));
  EXPECT_EQ(all->stats().store.bytes_moved, 0u);
  EXPECT_EQ(all->stats().hits, all->stats().expert_accesses);
}

// The forward's time splits into attention, MoE blocks and head, each part within its parent: an
// expert call paced to at least 2 ms (device profile) makes the experts' share known from below,
// and every timer sits inside forward_s, so the parts can only sum to less than the whole.
TEST_F(EngineTest, ForwardTimeSplitsIntoAttentionMoeAndHead) {
  auto seqs = random_tokens(2, kPrompt + kDecode, 9);
  EngineOptions o;
  o.policy = "lru";
  o.device_mem = "100%";
  o.link = "none";
  o.compute = "paced:device_expert=2ms,host_token=2ms";
  o.preload = true;
  auto eng = MoeEngine::open(dir_->path(), o);
  max_diff_vs(*eng, seqs, reference_logits(dir_->path(), seqs));
  const EngineStats s = eng->stats();
  const double experts = s.host_compute_s + s.device_compute_s;
  EXPECT_GE(experts, 2e-3 * static_cast<double>(s.expert_accesses));
  EXPECT_GE(s.moe_s, experts);
  EXPECT_GT(s.attention_s, 0.0);
  EXPECT_GT(s.head_s, 0.0);
  EXPECT_LE(s.attention_s + s.moe_s + s.head_s, s.forward_s);

  // The breakdown per token is the stats' difference divided out, its remainders what is left.
  EngineStats before, after;
  before.forward_s = 1, before.attention_s = 0.25, before.moe_s = 0.5, before.head_s = 0.125;
  before.host_compute_s = 0.25, before.store.io_wait_s = 0.0625;
  after = before;
  after.forward_s += 4, after.attention_s += 1, after.moe_s += 2, after.head_s += 0.5;
  after.host_compute_s += 1, after.device_compute_s += 0.5, after.store.io_wait_s += 0.25;
  const TokenBreakdown b = token_breakdown(after, before, 1e6);  // 1e6 tokens: seconds read as microseconds
  EXPECT_DOUBLE_EQ(b.forward_us, 4);
  EXPECT_DOUBLE_EQ(b.attention_us, 1);
  EXPECT_DOUBLE_EQ(b.experts_us, 1.5);
  EXPECT_DOUBLE_EQ(b.io_wait_us, 0.25);
  EXPECT_DOUBLE_EQ(b.moe_other_us, 2 - 1.5 - 0.25);
  EXPECT_DOUBLE_EQ(b.head_us, 0.5);
  EXPECT_DOUBLE_EQ(b.other_us, 4 - 1 - 2 - 0.5);
  EXPECT_EQ(b.values().size(), TokenBreakdown::parts().size());
}

TEST(EngineVariants, SharedExpertQwenNamesBf16ShardsAndFileLink) {
  torch::set_num_threads(1);
  TempDir dir;
  TinyModelOptions o;
  o.config = testing::tiny_config();
  o.config.model_type = "qwen2_moe";
  o.config.shared_expert_intermediate_size = 40;
  o.config.shared_expert_gate = true;
  o.config.norm_topk_prob = false;
  o.write = {DType::kBF16, 3};
  make_tiny_model(dir.path(), o);
  auto seqs = random_tokens(2, kPrompt + kDecode, 9);
  auto expect = reference_logits(dir.path(), seqs);
  for (const char* link : {"file", "3GBps,5us"}) {
    EngineOptions eo;
    eo.policy = "lru";
    eo.device_mem = "25%";
    eo.link = link;
    eo.chunk_bytes = 5000;
    auto eng = MoeEngine::open(dir.path(), eo);
    EXPECT_LT(max_diff_vs(*eng, seqs, expect), 1e-4) << link;
    EXPECT_GT(eng->stats().store.bytes_moved, 0u);
  }
}

// Dense layers among the MoE layers (expert ids count MoE layers only: the store, the file link
// and the policies must map them back to their decoder blocks), q/k norms, o biases, DeepSeek's
// ungated shared experts: the engine equals the reference under a small budget, from memory and
// from disk.
TEST(EngineVariants, FamiliesWithDenseLayersAndQkNorms) {
  torch::set_num_threads(1);
  struct Family {
    const char* type;
    std::vector<int> dense;
    int shared;
  };
  for (const Family& f : {Family{"qwen3_moe", {1}, 0}, Family{"olmoe", {}, 0}, Family{"deepseek", {0}, 96}}) {
    TempDir dir;
    TinyModelOptions o;
    o.config = testing::tiny_config();
    o.config.model_type = f.type;
    o.config.dense_layers = f.dense;
    o.config.dense_intermediate_size = 64;
    o.config.shared_expert_intermediate_size = f.shared;
    o.config.norm_topk_prob = false;
    o.config.o_bias = true;  // attention_bias
    make_tiny_model(dir.path(), o);
    const MoeConfig c = load_config(dir.path());
    ASSERT_EQ(c.num_moe_layers(), 3 - static_cast<int>(f.dense.size())) << f.type;
    auto seqs = random_tokens(2, kPrompt + kDecode, 4);
    auto expect = reference_logits(dir.path(), seqs);
    for (const char* link : {"file", "3GBps,5us"}) {
      EngineOptions eo;
      eo.policy = "lru";
      eo.device_mem = "25%";
      eo.link = link;
      auto eng = MoeEngine::open(dir.path(), eo);
      EXPECT_LT(max_diff_vs(*eng, seqs, expect), 1e-4) << f.type << " " << link;
      EXPECT_GT(eng->stats().store.bytes_moved, 0u) << f.type;
      EXPECT_EQ(eng->stats().expert_counts.size(), static_cast<std::size_t>(c.num_moe_layers() * c.num_experts));
    }
  }
}

// From disk there is no host copy: the policies that would run an expert on the host (Fiddler,
// static-hot, PreScope's plan) load it instead; the budget holds and the logits are the reference's.
TEST(EngineVariants, FileLinkStreamsWithoutAHostCopy) {
  torch::set_num_threads(1);
  TempDir dir;
  TinyModelOptions o;
  o.config = testing::tiny_config();
  o.write.dtype = DType::kBF16;
  make_tiny_model(dir.path(), o);
  auto seqs = random_tokens(2, kPrompt + kDecode, 5);
  auto expect = reference_logits(dir.path(), seqs);
  for (const char* policy : {"fiddler", "static-hot", "prescope"}) {
    EngineOptions eo;
    eo.policy = policy;
    eo.device_mem = "25%";
    eo.link = "file";
    eo.compute = "a100";  // a profile under which Fiddler would run small batches on the host
    auto eng = MoeEngine::open(dir.path(), eo);
    EXPECT_LT(max_diff_vs(*eng, seqs, expect), 1e-4) << policy;
    const EngineStats s = eng->stats();
    EXPECT_EQ(s.host_execs, 0u) << policy;
    EXPECT_GT(s.store.bytes_moved, 0u) << policy;
    EXPECT_LE(s.store.peak_bytes, s.budget_bytes) << policy;
    EXPECT_NE(eng->describe().find("measured"), std::string::npos) << eng->describe();
  }
}

// Sliding windows: the engine's cache drops the keys no later query sees (a windowed layer keeps
// W - 1 + T positions), and its logits stay the reference's through 100 decode steps.
TEST(EngineVariants, SlidingWindowKeepsOnlyTheWindowInTheCache) {
  torch::set_num_threads(1);
  TempDir dir;
  TinyModelOptions o;
  o.config = testing::tiny_config();
  o.config.sliding_window = 6;
  make_tiny_model(dir.path(), o);
  const int prompt = 8, total = 108;
  auto seqs = random_tokens(1, total, 12);
  auto expect = reference_logits(dir.path(), seqs);
  EngineOptions eo;
  eo.policy = "lru";
  eo.device_mem = "50%";
  auto eng = MoeEngine::open(dir.path(), eo);
  EXPECT_LT(testing::max_diff_vs(*eng, seqs, expect, prompt), 1e-4);
  // After the last decode step every layer holds the window's W - 1 older positions and the new one.
  EXPECT_EQ(eng->kv_cached_positions(), 3 * 6);
}

// The tiny model's checkpoint and host pool, for the store's own tests.
struct TinyPool {
  TinyPool() {
    TinyModelOptions o;
    o.config = testing::tiny_config();
    make_tiny_model(dir.path(), o);
    ck = Checkpoint::open(dir.path());
    pool = HostPool::load(*ck);
    register_builtin_links();
  }
  TempDir dir;
  decltype(Checkpoint::open("")) ck;
  decltype(HostPool::load(*ck)) pool;
};

TEST(ExpertStoreTest, DemandLoadOvertakesQueuedPrefetches) {
  TinyPool t;
  auto& ck = t.ck;
  auto& pool = t.pool;
  // 18 KiB per expert at 3 MB/s: about 6 ms per transfer.
  LinkSpec spec = parse_link_spec("3MBps,10us");
  ExpertStore store(pool.get(), make_link(spec, {pool.get(), ck.get()}), {pool->layout().bytes() * 10});
  for (int e = 0; e < 6; ++e) ASSERT_TRUE(store.prefetch({0, e}, kPriorityPrefetch));
  ASSERT_TRUE(store.request({1, 0}));
  store.pin({1, 0});
  store.acquire({1, 0});
  int still_moving = 0;
  for (int e = 0; e < 6; ++e) still_moving += !store.resident({0, e});
  EXPECT_GE(still_moving, 4) << "the demand load waited behind the prefetches";
  // Evicting a moving prefetch cancels it and frees its slot at once.
  EXPECT_TRUE(store.evict({0, 5}));
  EXPECT_FALSE(store.contains({0, 5}));
  EXPECT_FALSE(store.evict({1, 0})) << "pinned experts must not be evicted";
  store.unpin({1, 0});
  EXPECT_LE(store.stats().peak_bytes, store.budget_bytes());
}

// A prefetch counts in the statistics it was started under: what was fetched before reset_stats()
// (a policy's start-up fill when the engine opens) is no prefetch of the measured run, so the
// accuracy prefetches_used / prefetches stays within [0, 1].
TEST(ExpertStoreTest, PrefetchesBeforeAStatsResetAreNotCountedAsUsed) {
  TinyPool t;
  auto& ck = t.ck;
  auto& pool = t.pool;
  ExpertStore store(pool.get(), make_link(parse_link_spec("none"), {pool.get(), ck.get()}), {pool->layout().bytes() * 4});
  ASSERT_TRUE(store.prefetch({0, 0}, kPriorityPrefetch));
  store.reset_stats();
  ASSERT_TRUE(store.prefetch({0, 1}, kPriorityPrefetch));
  for (int e : {0, 1}) {
    ASSERT_TRUE(store.request({0, e}));
    store.pin({0, e});
    store.acquire({0, e});
    store.unpin({0, e});
  }
  EXPECT_EQ(store.stats().prefetches, 1u);
  EXPECT_EQ(store.stats().prefetches_used, 1u);
}

}  // namespace
}  // namespace ferry::moe
