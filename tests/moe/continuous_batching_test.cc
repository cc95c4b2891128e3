// Continuous batching: MoeEngine::step() over sequences of different lengths equals each sequence
// alone through the reference forward (1e-4, the engine tests' bound on logits); the batcher's
// greedy outputs for jobs served together equal the same jobs served one at a time, whatever the
// policy; queue limits, cancellation, stop tokens and draining behave as documented.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>

#include "core/error.h"
#include "moe/engine/continuous_batcher.h"
#include "moe/engine/engine.h"
#include "engine_test_util.h"
#include "moe_test_util.h"

namespace ferry::moe {
namespace {

using testing::TempDir;

// Logits equal the reference within 1e-4 (engine_test.cc); two engine results that each hold that
// bound differ by at most 2e-4, so a greedy choice can only differ where the top two are that close.
constexpr double kLogitTol = 1e-4;

std::vector<float> reference_logits(const std::string& dir, const std::vector<std::int32_t>& seq) {
  return testing::reference_logits(dir, {seq});
}

class ContinuousBatching : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    torch::set_num_threads(1);
    dir_ = new TempDir();
    TinyModelOptions o;
    o.config = testing::tiny_config();
    o.config.sliding_window = 7;  // the windowed cache per sequence too
    o.seed = 5;
    make_tiny_model(dir_->path(), o);
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::unique_ptr<MoeEngine> open(const std::string& policy, const std::string& budget) {
    EngineOptions o;
    o.policy = policy;
    o.device_mem = budget;
    o.link = "2GBps,5us";
    o.chunk_bytes = 4096;
    return MoeEngine::open(dir_->path(), o);
  }
  static TempDir* dir_;
};
TempDir* ContinuousBatching::dir_ = nullptr;

TEST_F(ContinuousBatching, StepOfMixedSequencesEqualsEachSequenceAlone) {
  // Three sequences: A is prefilled in chunks of 4 while B decodes; C joins late and leaves early.
  const auto all = testing::random_tokens(3, 30, 77);
  std::vector<std::vector<float>> expect;
  for (const auto& s : all) expect.push_back(reference_logits(dir_->path(), s));
  const int V = 256;
  for (const char* policy : {"lru", "prescope", "ondemand"}) {
    auto eng = open(policy, "30%");
    const int a = eng->open_sequence(), b = eng->open_sequence();
    std::vector<int> ids = {a, b, -1};
    std::vector<int> pos = {0, 0, 0};
    double worst = 0;
    std::vector<int> len = {30, 30, 12};
    for (int step = 0; step < 40; ++step) {
      if (step == 6) ids[2] = eng->open_sequence();
      std::vector<MoeEngine::SequenceInput> in;
      std::vector<int> who;
      for (int s = 0; s < 3; ++s) {
        if (ids[s] < 0 || pos[s] >= len[s]) continue;
        // A: chunks of 4; B: a prompt of 9, then one token; C: a prompt of 3, then one token.
        const int n = s == 0 ? std::min(4, len[s] - pos[s]) : pos[s] == 0 ? (s == 1 ? 9 : 3) : 1;
        in.push_back({ids[s], std::vector<std::int32_t>(all[s].begin() + pos[s], all[s].begin() + pos[s] + n)});
        who.push_back(s);
        pos[s] += n;
      }
      if (in.empty()) break;
      const auto got = eng->step(in);
      ASSERT_EQ(got.size(), in.size() * V);
      for (std::size_t k = 0; k < in.size(); ++k) {
        const int s = who[k], at = pos[s] - 1;  // the logits of the input's last position
        EXPECT_EQ(eng->sequence_position(ids[s]), pos[s]);
        for (int v = 0; v < V; ++v)
          worst = std::max<double>(worst, std::abs(got[k * V + v] - expect[s][static_cast<std::size_t>(at) * V + v]));
      }
      if (ids[2] >= 0 && pos[2] >= len[2]) {
        eng->close_sequence(ids[2]);
        ids[2] = -1;
        len[2] = 0;
      }
    }
    EXPECT_LT(worst, kLogitTol) << policy;
    EXPECT_EQ(pos[0], 30);
    EXPECT_EQ(pos[1], 30);
    // Windowed layers keep W - 1 + T positions per sequence: A's last chunk had 2 tokens, B's 1.
    EXPECT_EQ(eng->kv_cached_positions(), 3 * (6 + 2) + 3 * (6 + 1));
    auto st = eng->stats();
    EXPECT_LE(st.store.peak_bytes, st.budget_bytes) << policy;
  }
}

TEST_F(ContinuousBatching, StepRefusesBadInputsAndChangesNothing) {
  auto eng = open("lru", "50%");
  const int a = eng->open_sequence();
  eng->step({{a, {1, 2, 3}}});
  EXPECT_THROW(eng->step({{a + 100, {1}}}), InvalidArgument);
  EXPECT_THROW(eng->step({{a, {1}}, {a, {2}}}), InvalidArgument);
  EXPECT_THROW(eng->step({{a, {}}}), InvalidArgument);
  EXPECT_THROW(eng->step({{a, {1, 256}}}), InvalidArgument);
  EXPECT_THROW(eng->step({{a, std::vector<std::int32_t>(126, 1)}}), InvalidArgument);  // 3 + 126 > 128 positions
  EXPECT_THROW(eng->step({}), InvalidArgument);
  EXPECT_EQ(eng->sequence_position(a), 3);
  // Still the same sequence: its next logits are the reference's.
  const auto got = eng->step({{a, {4}}});
  const auto expect = reference_logits(dir_->path(), {1, 2, 3, 4});
  double worst = 0;
  for (int v = 0; v < 256; ++v) worst = std::max<double>(worst, std::abs(got[v] - expect[3 * 256 + v]));
  EXPECT_LT(worst, kLogitTol);
  eng->close_sequence(a);
  EXPECT_THROW(eng->close_sequence(a), InvalidArgument);
  EXPECT_EQ(eng->kv_cached_positions(), 0);
}

// One decoding path: a lock-step batch is sequences that joined together, so forward() over B
// rows and step() over B sequences with the same tokens compute the same thing, bit for bit
// (prompt, then decode steps), for a policy that prefetches and one that does not. (Placement may
// differ between runs of a prefetching policy, and with it the order of each row's top-2 expert
// sums; a sum of two terms does not depend on their order.)
TEST_F(ContinuousBatching, LockStepAndContinuousGiveIdenticalLogits) {
  const auto seqs = testing::random_tokens(3, 12, 41);
  for (const char* policy : {"lru", "prescope"}) {
    auto lock = open(policy, "30%"), cont = open(policy, "30%");
    std::vector<int> ids;
    for (std::size_t b = 0; b < seqs.size(); ++b) ids.push_back(cont->open_sequence());
    for (int at = 0, n = 5; at < 12; at += n, n = 1) {  // a prompt of 5, then one token per step
      TokenBatch rows;
      std::vector<MoeEngine::SequenceInput> in;
      for (std::size_t b = 0; b < seqs.size(); ++b) {
        rows.emplace_back(seqs[b].begin() + at, seqs[b].begin() + at + n);
        in.push_back({ids[b], rows.back()});
      }
      EXPECT_EQ(lock->forward(rows), cont->step(in)) << policy << " at position " << at;
    }
    EXPECT_EQ(lock->kv_cached_positions(), cont->kv_cached_positions());
    if (std::string(policy) == "lru") {  // demand loads only: the same transfers (prefetches race compute)
      EXPECT_EQ(lock->stats().store.bytes_moved, cont->stats().store.bytes_moved);
    }
    lock->reset();
    EXPECT_EQ(lock->kv_cached_positions(), 0);
  }
}

// A sequence opened with a position limit is refused past it, changes nothing then, and its KV
// cache never holds more than kv_cache_bytes() of that many positions.
TEST_F(ContinuousBatching, SequenceLimitBoundsItsKvCache) {
  auto eng = open("lru", "50%");
  const MoeConfig& c = eng->config();
  const int a = eng->open_sequence({10, 0});
  const auto t = testing::random_tokens(1, 11, 3)[0];
  eng->step({{a, std::vector<std::int32_t>(t.begin(), t.begin() + 9)}});
  const std::uint64_t per_position = 2ull * c.num_layers * c.num_kv_heads * c.head_dim * sizeof(float);
  EXPECT_LE(eng->kv_bytes(), 10 * per_position);
  EXPECT_THROW(eng->step({{a, {t[9], t[10]}}}), InvalidArgument);  // 9 + 2 > 10
  EXPECT_EQ(eng->sequence_position(a), 9);
  eng->step({{a, {t[9]}}});
  EXPECT_EQ(eng->sequence_position(a), 10);
  EXPECT_LE(eng->kv_bytes(), 10 * per_position);
  EXPECT_THROW(eng->open_sequence({c.max_position_embeddings + 1, 0}), InvalidArgument);
}

// Collects a job's tokens; can cancel itself after `cancel_after` tokens.
class Collect : public GenerationSink {
 public:
  explicit Collect(int cancel_after = -1) : cancel_after_(cancel_after) {}
  bool on_token(std::int32_t token, std::span<const float>) override {
    std::lock_guard lock(mu_);
    tokens.push_back(token);
    if (cancel_after_ >= 0 && static_cast<int>(tokens.size()) >= cancel_after_) gone_ = true;
    return true;
  }
  void on_finish(FinishReason r, const std::string& e) override {
    std::lock_guard lock(mu_);
    reason = r;
    error = e;
    done = true;
    cv_.notify_all();
  }
  bool cancelled() const override { return gone_.load(); }
  void wait() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return done; });
  }
  std::vector<std::int32_t> tokens;
  FinishReason reason = FinishReason::kError;
  std::string error;
  bool done = false;

 private:
  int cancel_after_;
  std::atomic<bool> gone_{false};
  std::mutex mu_;
  std::condition_variable cv_;
};

GenerationJob job(const std::vector<std::int32_t>& prompt, int max_new, std::shared_ptr<GenerationSink> sink) {
  GenerationJob j;
  j.prompt = prompt;
  j.sampling.max_new_tokens = max_new;
  j.sink = std::move(sink);
  return j;
}

// Greedy tokens of each prompt through a batcher; all jobs submitted before the first step.
std::vector<std::vector<std::int32_t>> serve(MoeEngine& eng, const BatcherOptions& bo, const TokenBatch& prompts,
                                             const std::vector<int>& max_new) {
  ContinuousBatcher batcher(eng, bo);
  std::vector<std::shared_ptr<Collect>> sinks;
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    sinks.push_back(std::make_shared<Collect>());
    EXPECT_EQ(batcher.submit(job(prompts[i], max_new[i], sinks.back())), ContinuousBatcher::Admit::kQueued);
  }
  batcher.start();
  std::vector<std::vector<std::int32_t>> out;
  for (auto& s : sinks) {
    s->wait();
    EXPECT_EQ(s->reason, FinishReason::kLength) << s->error;
    out.push_back(s->tokens);
  }
  batcher.stop(0);
  return out;
}

TEST_F(ContinuousBatching, GreedyOutputsServedTogetherEqualOneAtATime) {
  TokenBatch prompts;
  std::vector<int> max_new;
  for (int i = 0; i < 7; ++i) {
    prompts.push_back(testing::random_tokens(1, 3 + 5 * i, 200 + i)[0]);  // prompts of 3 .. 33 tokens
    max_new.push_back(4 + (i * 7) % 13);                                  // and 4 .. 16 new tokens
  }
  auto alone_eng = open("lru", "100%");
  const auto alone = serve(*alone_eng, BatcherOptions{1, 16, 64}, prompts, max_new);
  for (const char* policy : {"prescope", "lru", "fiddler"}) {
    auto eng = open(policy, "25%");
    const auto together = serve(*eng, BatcherOptions{4, 16, 5}, prompts, max_new);  // chunked prefill of 5
    for (std::size_t i = 0; i < prompts.size(); ++i) {
      ASSERT_EQ(together[i].size(), static_cast<std::size_t>(max_new[i]));
      std::size_t d = 0;
      while (d < together[i].size() && together[i][d] == alone[i][d]) ++d;
      if (d == together[i].size()) continue;
      // A different token only where the reference's top two are within the two runs' error.
      std::vector<std::int32_t> seq = prompts[i];
      seq.insert(seq.end(), alone[i].begin(), alone[i].begin() + static_cast<std::ptrdiff_t>(d));
      const auto ref = reference_logits(dir_->path(), seq);
      const float* last = ref.data() + (seq.size() - 1) * 256;
      EXPECT_LE(std::abs(last[together[i][d]] - last[alone[i][d]]), 2 * kLogitTol)
          << policy << " request " << i << " differs at token " << d << " without a near tie";
    }
  }
}

TEST_F(ContinuousBatching, QueueLimitCancellationStopTokensAndDrain) {
  auto eng = open("lru", "50%");
  const auto p = testing::random_tokens(1, 6, 9)[0];
  {
    // Before start(): max_batch 1 + max_queue 1 places; the third job is refused.
    ContinuousBatcher b(*eng, BatcherOptions{1, 1, 8});
    auto s1 = std::make_shared<Collect>(), s2 = std::make_shared<Collect>(2), s3 = std::make_shared<Collect>();
    EXPECT_EQ(b.submit(job(p, 5, s1)), ContinuousBatcher::Admit::kQueued);
    EXPECT_EQ(b.submit(job(p, 50, s2)), ContinuousBatcher::Admit::kQueued);
    EXPECT_EQ(b.submit(job(p, 5, s3)), ContinuousBatcher::Admit::kQueueFull);
    b.start();
    s1->wait();
    s2->wait();
    EXPECT_EQ(s1->reason, FinishReason::kLength);
    EXPECT_EQ(s1->tokens.size(), 5u);
    // Cancelled after its 2nd token: the slot is freed before the next step, so no 3rd token.
    EXPECT_EQ(s2->reason, FinishReason::kCancelled);
    EXPECT_EQ(s2->tokens.size(), 2u);
    EXPECT_FALSE(s3->done);
    EXPECT_EQ(eng->kv_cached_positions(), 0);
    b.stop(0);
    EXPECT_EQ(b.submit(job(p, 5, s3)), ContinuousBatcher::Admit::kStopping);
  }
  {
    // A stop token: the first greedy token k >= 1 not generated before it (k = 0 when every token
    // repeats the first) ends the job with kStop after the k tokens before it.
    ContinuousBatcher b(*eng, BatcherOptions{2, 4, 8});
    auto probe = std::make_shared<Collect>();
    b.submit(job(p, 8, probe));
    b.start();
    probe->wait();
    const auto& t = probe->tokens;
    std::size_t k = 1;
    while (k < t.size() && std::find(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(k), t[k]) != t.begin() + static_cast<std::ptrdiff_t>(k)) ++k;
    if (k == t.size()) k = 0;
    auto stopped = std::make_shared<Collect>();
    auto j = job(p, 10, stopped);
    j.stop_tokens = {t[k]};
    b.submit(std::move(j));
    stopped->wait();
    EXPECT_EQ(stopped->reason, FinishReason::kStop);
    EXPECT_EQ(stopped->tokens, std::vector<std::int32_t>(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(k)));
    // Drain of 0 s: a long job is cancelled at the next step, and stop() returns.
    auto long_job = std::make_shared<Collect>();
    b.submit(job(p, 100, long_job));
    for (int i = 0; i < 10000 && b.snapshot().running != 1; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    b.stop(0);
    EXPECT_TRUE(long_job->done);
    EXPECT_EQ(long_job->reason, FinishReason::kCancelled);
    EXPECT_LT(long_job->tokens.size(), 100u);
  }
}

// The scheduler's KV bound: a request whose own cache exceeds it is refused at submit; the others
// wait in the queue until the running ones leave room, so the engine's KV bytes never exceed the
// bound while every job still finishes.
TEST_F(ContinuousBatching, KvBoundQueuesOrRefusesRequests) {
  auto eng = open("lru", "50%");
  const MoeConfig& c = eng->config();
  const std::uint64_t per_position = 2ull * c.num_layers * c.num_kv_heads * c.head_dim * sizeof(float);
  // Requests of 10 + 8 - 1 = 17 positions each; the bound holds two of them, not three.
  const std::uint64_t bound = 2 * 17 * per_position + per_position / 2;
  const TokenBatch prompts = testing::random_tokens(3, 10, 61);

  ContinuousBatcher b(*eng, BatcherOptions{3, 8, 4, bound});
  EXPECT_THROW(b.submit(job(prompts[0], 30, std::make_shared<Collect>())), InvalidArgument);  // 39 positions
  std::uint64_t worst_kv = 0;
  int most = 0;
  b.set_step_observer([&](const StepInfo& info) {
    worst_kv = std::max(worst_kv, eng->kv_bytes());
    most = std::max(most, info.sequences);
  });
  std::vector<std::shared_ptr<Collect>> sinks;
  for (int i = 0; i < 3; ++i) {
    sinks.push_back(std::make_shared<Collect>());
    EXPECT_EQ(b.submit(job(prompts[i], 8, sinks.back())), ContinuousBatcher::Admit::kQueued);
  }
  b.start();
  for (int i = 0; i < 3; ++i) {
    sinks[i]->wait();
    EXPECT_EQ(sinks[i]->reason, FinishReason::kLength) << sinks[i]->error;
    EXPECT_EQ(sinks[i]->tokens.size(), 8u) << "request " << i;
  }
  b.stop(0);
  EXPECT_LE(worst_kv, bound);
  EXPECT_EQ(most, 2);  // the third waited for the first two, though a batch slot was free
  EXPECT_EQ(b.snapshot().kv_reserved_bytes, 0u);
}


// Prefix caching at the engine: a sequence rewound to a prefix of its tokens continues as a fresh
// sequence with that prefix would (the reference forward, 1e-4); a windowed layer that dropped a key
// the rewound position needs refuses, changing nothing.
TEST_F(ContinuousBatching, RewoundSequenceContinuesAsAFreshOne) {
  const auto x = testing::random_tokens(1, 20, 31)[0], y = testing::random_tokens(1, 6, 32)[0];
  auto eng = open("lru", "50%");
  const int V = 256;
  auto check = [&](const std::vector<std::int32_t>& seq, const std::vector<float>& got, const char* what) {
    const auto ref = reference_logits(dir_->path(), seq);
    double worst = 0;
    for (int v = 0; v < V; ++v)
      worst = std::max<double>(worst, std::abs(got[v] - ref[(seq.size() - 1) * V + v]));
    EXPECT_LT(worst, kLogitTol) << what;
  };
  // Short (within the window of 7): rewinding into the middle works.
  const int a = eng->open_sequence();
  eng->step({{a, std::vector<std::int32_t>(x.begin(), x.begin() + 5)}});
  ASSERT_TRUE(eng->rewind_sequence(a, 3, 0));
  EXPECT_EQ(eng->sequence_position(a), 3);
  std::vector<std::int32_t> seq(x.begin(), x.begin() + 3);
  seq.insert(seq.end(), y.begin(), y.end());
  check(seq, eng->step({{a, y}}), "rewound to 3 of 5");
  // Long: once a later step slid the windowed layers past their early keys, position 5 cannot be
  // resumed; the end can.
  const int b = eng->open_sequence();
  eng->step({{b, x}});
  eng->step({{b, {y[0]}}});
  EXPECT_FALSE(eng->rewind_sequence(b, 5, 0));
  EXPECT_EQ(eng->sequence_position(b), 21);
  ASSERT_TRUE(eng->rewind_sequence(b, 21, 40));
  seq = x;
  seq.insert(seq.end(), y.begin(), y.end());
  check(seq, eng->step({{b, std::vector<std::int32_t>(y.begin() + 1, y.end())}}), "rewound to its end");
  EXPECT_THROW(eng->rewind_sequence(99, 1, 0), InvalidArgument);
}

// The batcher's prefix cache: a chat's second turn (the first turn's prompt and answer, then more)
// reuses the first turn's KV cache and answers as a batcher without the cache does, token for
// token but at a near tie; a request that opts out reuses nothing.
TEST_F(ContinuousBatching, PrefixCacheAnswersAsWithoutIt) {
  const auto p = testing::random_tokens(1, 12, 41)[0], more = testing::random_tokens(1, 5, 42)[0];
  auto eng = open("lru", "50%");
  BatcherOptions cached_opts{4, 16, 5};
  cached_opts.prefix_cache = 2;
  ContinuousBatcher batcher(*eng, cached_opts);
  batcher.start();
  auto run = [&](const std::vector<std::int32_t>& prompt, bool cache) {
    auto sink = std::make_shared<Collect>();
    GenerationJob j = job(prompt, 8, sink);
    j.cache_prompt = cache;
    EXPECT_EQ(batcher.submit(std::move(j)), ContinuousBatcher::Admit::kQueued);
    sink->wait();
    EXPECT_EQ(sink->reason, FinishReason::kLength) << sink->error;
    return sink->tokens;
  };
  const auto first = run(p, true);
  std::vector<std::int32_t> turn2 = p;
  turn2.insert(turn2.end(), first.begin(), first.end());
  turn2.insert(turn2.end(), more.begin(), more.end());
  const auto second = run(turn2, true);
  // The first turn's cache held its prompt and all but its last generated token.
  EXPECT_EQ(batcher.snapshot().prompt_tokens_cached, p.size() + first.size() - 1);
  const auto opted_out = run(turn2, false);
  EXPECT_EQ(batcher.snapshot().prompt_tokens_cached, p.size() + first.size() - 1);
  batcher.stop(0);
  EXPECT_EQ(eng->kv_cached_positions(), 0);  // the kept caches went with the batcher

  auto plain_eng = open("lru", "50%");
  const auto plain = serve(*plain_eng, BatcherOptions{4, 16, 5}, {turn2}, {8})[0];
  for (const auto* got : {&second, &opted_out}) {
    std::size_t d = 0;
    while (d < plain.size() && (*got)[d] == plain[d]) ++d;
    if (d == plain.size()) continue;
    std::vector<std::int32_t> seq = turn2;
    seq.insert(seq.end(), plain.begin(), plain.begin() + static_cast<std::ptrdiff_t>(d));
    const auto ref = reference_logits(dir_->path(), seq);
    const float* last = ref.data() + (seq.size() - 1) * 256;
    EXPECT_LE(std::abs(last[(*got)[d]] - last[plain[d]]), 2 * kLogitTol) << "differs at token " << d << " without a near tie";
  }
}

// Sampling (sampler.h): the knobs do what their definitions say.
TEST(Sampler, MinPLogitBiasAndPenaltiesFollowTheirDefinitions) {
  std::vector<float> logits = {2.0f, 1.0f, 0.5f, -1.0f, 1.9f};
  std::uint64_t rng = 7;
  SamplingOptions o;
  o.temperature = 1.0;
  // min_p 1: only the most likely token survives, whatever the draw.
  o.min_p = 1.0;
  for (int i = 0; i < 50; ++i) EXPECT_EQ(sample_token(logits.data(), 5, o, rng), 0);
  // min_p 0.8 at temperature 1: p_i / p_max = exp(l_i - 2) >= 0.8 keeps tokens 0 and 4 (e^-0.1 = 0.905) only.
  o.min_p = 0.8;
  std::vector<int> seen(5, 0);
  for (int i = 0; i < 400; ++i) ++seen[static_cast<std::size_t>(sample_token(logits.data(), 5, o, rng))];
  EXPECT_EQ(seen[1] + seen[2] + seen[3], 0);
  EXPECT_GT(seen[0], 0);
  EXPECT_GT(seen[4], 0);
  // ... and the same with the sorted path (top_k): the same set.
  o.top_k = 5;
  seen.assign(5, 0);
  for (int i = 0; i < 400; ++i) ++seen[static_cast<std::size_t>(sample_token(logits.data(), 5, o, rng))];
  EXPECT_EQ(seen[1] + seen[2] + seen[3], 0);
  // Greedy with a logit bias: +3 on token 3 makes it the most likely (2.0 vs -1 + 3.5).
  SamplingOptions g;
  g.logit_bias = {{3, 3.5f}};
  EXPECT_EQ(sample_token(logits.data(), 5, g, rng), 3);
  // Repeat penalty 4 over the last 2 tokens {0, 2}: token 0 falls to 0.5, so 4 (1.9) wins; token 0
  // outside the window is not penalised.
  SamplingOptions r;
  r.repeat_penalty = 4;
  r.penalty_last_n = 2;
  const std::vector<std::int32_t> hist = {4, 0, 2};
  EXPECT_EQ(sample_token(logits.data(), 5, r, rng, hist), 4);
  r.penalty_last_n = 1;
  EXPECT_EQ(sample_token(logits.data(), 5, r, rng, hist), 0);
  // Presence and frequency (OpenAI): token 0 seen twice: 2 - 0.1 - 2 * 0.1 = 1.7 < 1.9.
  SamplingOptions f;
  f.presence_penalty = 0.1;
  f.frequency_penalty = 0.1;
  f.penalty_last_n = -1;
  const std::vector<std::int32_t> twice = {0, 0};
  EXPECT_EQ(sample_token(logits.data(), 5, f, rng, twice), 4);
  f.frequency_penalty = 0.0;  // presence only: 2 - 0.05 = 1.95 > 1.9
  f.presence_penalty = 0.05;
  EXPECT_EQ(sample_token(logits.data(), 5, f, rng, twice), 0);
}

// One pass without top-k/top-p samples each token with its softmax probability: over 20,000 draws
// each frequency is within 5 standard deviations of p_i (sqrt(p (1 - p) / n) <= 0.0036).
TEST(Sampler, UnsortedPathDrawsTheSoftmax) {
  std::vector<float> logits = {0.3f, -0.2f, 1.1f, 0.0f};
  SamplingOptions o;
  o.temperature = 0.7;
  std::vector<double> p(4);
  double sum = 0;
  for (int i = 0; i < 4; ++i) sum += p[i] = std::exp(logits[i] / 0.7);
  std::vector<int> seen(4, 0);
  std::uint64_t rng = 3;
  const int n = 20000;
  for (int i = 0; i < n; ++i) ++seen[static_cast<std::size_t>(sample_token(logits.data(), 4, o, rng))];
  for (int i = 0; i < 4; ++i) {
    const double pi = p[i] / sum;
    EXPECT_NEAR(static_cast<double>(seen[i]) / n, pi, 5 * std::sqrt(pi * (1 - pi) / n)) << i;
  }
}

}  // namespace
}  // namespace ferry::moe
