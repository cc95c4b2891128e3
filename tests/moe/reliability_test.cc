// MoE reliability: the device budget and the logits do not depend on the predictor being right
// (a predictor that is wrong on every call drives prefetching), and a checkpoint whose tensors
// are cut short on disk is refused when the engine opens it, not in the middle of generation.
#include <algorithm>
#include <filesystem>
#include <memory>
#include <random>

#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>

#include "core/error.h"
#include "moe/engine/engine.h"
#include "moe/model/checkpoint.h"
#include "moe/model/reference_model.h"
#include "moe/sched/lru_policy.h"
#include "engine_test_util.h"
#include "moe_test_util.h"

namespace ferry::moe {
namespace {

using testing::TempDir;

using testing::kDecode;
using testing::kPrompt;

// The routing of a run, one entry per on_route call: (layer, active experts).
struct RouteLog {
  std::vector<std::pair<int, std::vector<int>>> routes;
};

// LRU that writes down every layer's routing, to tell the wrong predictor what will NOT happen.
class RecordingPolicy : public LruPolicy {
 public:
  RecordingPolicy(const PolicyInputs&, std::shared_ptr<RouteLog> log) : log_(std::move(log)) {}
  std::string name() const override { return "test-record"; }
  void on_route(const RouteInfo& route, std::span<Placement> placement) override {
    log_->routes.emplace_back(route.layer, std::vector<int>(route.experts.begin(), route.experts.end()));
    LruPolicy::on_route(route, placement);
  }

 private:
  std::shared_ptr<RouteLog> log_;
};

// Always wrong: for layers l+1 .. l+lookahead it gives probability 1 to exactly the experts the
// recorded run did not use there, and 0 to those it used. It follows the run through observe().
class InvertedPredictor : public Predictor {
 public:
  InvertedPredictor(std::shared_ptr<const RouteLog> log, int num_experts) : log_(std::move(log)), experts_(num_experts) {}
  std::string name() const override { return "inverted"; }
  void observe(int, std::span<const int>, std::span<const float>) override { ++cursor_; }
  void predict(const PredictInput& in, int lookahead, std::vector<std::vector<float>>& out) override {
    out.clear();
    for (int d = 0; d < lookahead; ++d) {
      const std::size_t i = cursor_ + static_cast<std::size_t>(d);  // cursor_ = index of the next route
      if (i >= log_->routes.size() || log_->routes[i].first != in.layer + 1 + d) break;
      std::vector<float> p(experts_, 1.0f);
      for (int e : log_->routes[i].second) p[e] = 0.0f;
      out.push_back(std::move(p));
    }
  }

 private:
  std::shared_ptr<const RouteLog> log_;
  int experts_;
  std::size_t cursor_ = 0;
};

struct WrongPrefetchCounters {
  std::uint64_t predictions = 0;      // predict() calls that gave at least one layer
  std::uint64_t prefetches = 0;       // prefetches the cache accepted
  std::uint64_t predicted_used = 0;   // experts predicted for a layer that the layer then used
};

// Next-gate-like prefetching driven by the inverted predictor: while layer l computes, every
// expert predicted for l+1 .. l+2 is prefetched, evicting the least recently used expert of
// another layer to make room. Counts how often a prediction turned out right (never, if the
// predictor works as intended).
class WrongPrefetchPolicy : public LruPolicy {
 public:
  WrongPrefetchPolicy(const PolicyInputs&, std::shared_ptr<const RouteLog> log,
                      std::shared_ptr<WrongPrefetchCounters> counters)
      : log_(std::move(log)), counters_(std::move(counters)) {}
  std::string name() const override { return "test-wrong-prefetch"; }
  void attach(const PolicyContext& ctx) override {
    LruPolicy::attach(ctx);
    predictor_ = std::make_unique<InvertedPredictor>(log_, ctx.num_experts);
    predicted_.assign(ctx.num_layers, {});
  }
  void on_route(const RouteInfo& route, std::span<Placement> placement) override {
    for (int e : route.experts)
      counters_->predicted_used += std::count(predicted_[route.layer].begin(), predicted_[route.layer].end(), e);
    predicted_[route.layer].clear();
    predictor_->observe(route.layer, route.experts, {});
    LruPolicy::on_route(route, placement);
  }
  void on_dispatched(const RouteInfo& route) override {
    PredictInput in{route.layer, route.hidden, route.num_tokens, route.hidden_size, route.experts};
    predictor_->predict(in, 2, scores_);
    counters_->predictions += !scores_.empty();
    for (std::size_t d = 0; d < scores_.size(); ++d) {
      const int layer = route.layer + 1 + static_cast<int>(d);
      for (int e = 0; e < static_cast<int>(scores_[d].size()); ++e) {
        if (scores_[d][e] <= 0) continue;
        predicted_[layer].push_back(e);
        const ExpertId id{layer, e};
        if (ctx_.cache->contains(id)) continue;
        if (ctx_.cache->free_slots() == 0 && !make_room(route.layer)) return;
        if (ctx_.cache->prefetch(id, kPriorityPrefetch + static_cast<int>(d))) ++counters_->prefetches;
        recency_.touch(id);
      }
    }
  }

 private:
  bool make_room(int current_layer) {
    std::vector<ExpertId> c;
    for (ExpertId id : ctx_.cache->evictable())
      if (id.layer != current_layer) c.push_back(id);
    if (c.empty()) return false;
    return ctx_.cache->evict(recency_.least_recent(c));
  }

  std::shared_ptr<const RouteLog> log_;
  std::shared_ptr<WrongPrefetchCounters> counters_;
  std::unique_ptr<Predictor> predictor_;
  std::vector<std::vector<float>> scores_;
  std::vector<std::vector<int>> predicted_;  // [layer] experts predicted for it since it last ran
};

using testing::random_tokens;
using testing::max_diff_vs;

TEST(MoeReliability, AlwaysWrongPredictorKeepsBudgetAndLogits) {
  torch::set_num_threads(1);
  TempDir dir;
  TinyModelOptions mo;
  mo.config = testing::tiny_config();
  mo.seed = 23;
  make_tiny_model(dir.path(), mo);
  const std::uint64_t eb = 3ull * 32 * 48 * 4;
  auto log = std::make_shared<RouteLog>();
  auto counters = std::make_shared<WrongPrefetchCounters>();
  register_builtin_policies();
  register_policy("test-record", [log](const PolicyInputs& o) { return std::make_unique<RecordingPolicy>(o, log); });
  register_policy("test-wrong-prefetch", [log, counters](const PolicyInputs& o) {
    return std::make_unique<WrongPrefetchPolicy>(o, log, counters);
  });

  const std::string tight = std::to_string(2 * eb + eb / 2);  // 2 slots: one layer's top-2
  for (int batch : {1, 3})
    for (const std::string& budget : {tight, std::to_string(5 * eb), std::string("50%")}) {
      const auto seqs = random_tokens(batch, kPrompt + kDecode, 40 + batch);
      auto ck = Checkpoint::open(dir.path());
      const auto expect = ReferenceModel::load(*ck)->forward(seqs, true);
      EngineOptions o;
      o.device_mem = budget;
      o.link = "2GBps,5us";
      o.chunk_bytes = 4096;
      log->routes.clear();
      o.policy = "test-record";
      auto rec = MoeEngine::open(dir.path(), o);
      ASSERT_LT(max_diff_vs(*rec, seqs, expect), 1e-4);
      ASSERT_FALSE(log->routes.empty());

      *counters = {};
      o.policy = "test-wrong-prefetch";
      auto eng = MoeEngine::open(dir.path(), o);
      EXPECT_LT(max_diff_vs(*eng, seqs, expect), 1e-4) << "budget " << budget << " batch " << batch;
      const auto s = eng->stats();
      EXPECT_LE(s.store.peak_bytes, s.budget_bytes) << "budget " << budget << " batch " << batch;
      EXPECT_GT(counters->predictions, 0u);
      // With 2 slots both hold the pinned experts of the layer computing: no room to prefetch.
      if (budget != tight) {
        EXPECT_GT(counters->prefetches, 0u) << "the wrong predictions were never acted on";
      }
      EXPECT_EQ(counters->predicted_used, 0u) << "the predictor was right at least once";
      // Every wrong prefetch is traffic on top of what the layers needed.
      EXPECT_GT(s.store.bytes_moved, 0u);
    }
}

// Cuts `bytes` off the end of `path`.
void truncate_by(const std::string& path, std::uintmax_t bytes) {
  const auto size = std::filesystem::file_size(path);
  std::filesystem::resize_file(path, size - bytes);
}

TEST(MoeReliability, TruncatedCheckpointIsRefusedAtLoad) {
  torch::set_num_threads(1);
  for (int shards : {1, 3}) {
    for (std::uintmax_t cut : {std::uintmax_t{4}, std::uintmax_t{3000}}) {
      TempDir dir;
      TinyModelOptions mo;
      mo.config = testing::tiny_config();
      mo.write.shards = shards;
      make_tiny_model(dir.path(), mo);
      std::string victim;
      for (const auto& e : std::filesystem::directory_iterator(dir.path()))
        if (e.path().extension() == ".safetensors" && e.path().string() > victim) victim = e.path().string();
      ASSERT_FALSE(victim.empty());
      truncate_by(victim, cut);
      for (const char* link : {"file", "2GBps,5us"}) {
        EngineOptions o;
        o.link = link;
        o.device_mem = "50%";
        try {
          auto eng = MoeEngine::open(dir.path(), o);
          ADD_FAILURE() << "opened a checkpoint cut by " << cut << " bytes (" << shards << " shards, link " << link
                        << ")";
        } catch (const FormatError& e) {
          const std::string msg = e.what();
          EXPECT_NE(msg.find(std::filesystem::path(victim).filename().string()), std::string::npos) << msg;
          EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
          EXPECT_EQ(msg.find('\n'), std::string::npos) << "one line: " << msg;
        }
      }
    }
  }
}

}  // namespace
}  // namespace ferry::moe
