// A layer's experts in one grouped call (moe/engine/expert_group.h) against one call per expert:
//  - run_expert_group adds into a layer's output what run_expert, called for each member in the
//    same order, adds, bit for bit, for every weight format (a mixed layout too), with and without
//    expert biases and gpt-oss's clamped SwiGLU, tokens shared by several members included;
//  - the engine's logits with grouping equal those of one call per expert bit for bit, for every
//    family the tests cover (Mixtral, Qwen2-MoE's gated shared expert, DeepSeek-V3's biased group
//    routing and shared expert, gpt-oss's expert biases and clamped SwiGLU), every format
//    (Mixtral; F32, Q4_K and MXFP4 on the others), batches 1 and 16, every expert resident and
//    budgets where some experts are hits and some load.
//
// The bound is 0, not a summation-order tolerance: both paths compute each expert's rows with the
// same calls on the same bytes (expert_group.h says why each step is exact), and the engine adds
// the experts' contributions in an order fixed by the routing and the placement (hits in expert
// order, then host experts, then loads), which grouping keeps. The one place two summation orders
// could meet is a placement that depends on the transfers' timing; the budgets here (ondemand, lru)
// place by the cache's bookkeeping only.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include <torch/types.h>
#include <torch/utils.h>

#include "moe/engine/engine.h"
#include "moe/engine/expert_call.h"
#include "moe/engine/expert_group.h"
#include "moe/model/family.h"
#include "moe/model/tiny_model.h"
#include "moe/quant/quantize.h"
#include "engine_test_util.h"
#include "moe_test_util.h"

namespace ferry::moe {
namespace {

using testing::TempDir;

// An expert of `layout` from random floats, in the kernels' layout.
std::vector<std::byte> random_expert(const ExpertLayout& L, std::uint64_t seed) {
  torch::manual_seed(seed);
  std::vector<std::byte> bytes(L.bytes());
  const auto fill = [&](quant::QuantType type, std::uint64_t offset, std::int64_t rows, std::int64_t cols) {
    auto v = torch::randn({rows * cols}) * 0.1;
    quant::quantize_row(type, v.data_ptr<float>(), bytes.data() + offset, static_cast<std::size_t>(rows * cols));
  };
  fill(L.format, L.w1_offset(), L.intermediate, L.hidden);
  fill(L.format, L.w3_offset(), L.intermediate, L.hidden);
  fill(L.down_format, L.w2_offset(), L.hidden, L.intermediate);
  L.to_kernel_layout(bytes.data());
  return bytes;
}

TEST(ExpertGroup, EqualsOneCallPerExpertBitForBit) {
  torch::NoGradGuard ng;
  using quant::QuantType;
  const std::int64_t H = 256, I = 512, N = 6;
  std::vector<ExpertLayout> layouts;
  for (QuantType t : {QuantType::kF32, QuantType::kF16, QuantType::kBF16, QuantType::kQ8_0, QuantType::kQ4_0,
                      QuantType::kQ4_K, QuantType::kQ6_K, QuantType::kMXFP4})
    layouts.emplace_back(H, I, t);
  layouts.emplace_back(H, I, QuantType::kQ4_K, QuantType::kQ6_K);  // Q4_K_M's experts
  // Tokens 0..5 routed to 4 experts; token 2 to three of them, token 5 to none.
  const std::vector<ExpertWork> work = {
      {0, {0, 2}, {0.5f, 0.25f}}, {3, {1, 2, 3}, {0.75f, 0.5f, 1.f}}, {5, {2}, {0.25f}}, {6, {4, 0, 1}, {1.f, 0.5f, 0.25f}}};
  for (const bool gpt_oss : {false, true}) {
    MoeConfig c = testing::tiny_config();
    c.hidden_size = H;
    c.intermediate_size = I;
    if (gpt_oss) {
      c.swiglu_limit = 0.05;  // small enough that the clamps bind on these values
      c.swiglu_alpha = 1.702;
    }
    for (const ExpertLayout& L : layouts) {
      const auto m = torch::randn({N, H});
      std::vector<std::vector<std::byte>> experts;
      std::vector<ExpertGroupMember> members;
      for (std::size_t k = 0; k < work.size(); ++k) experts.push_back(random_expert(L, 10 + k));
      for (std::size_t k = 0; k < work.size(); ++k) {
        ExpertBias b;
        if (gpt_oss) b = {torch::randn({I}) * 0.05, torch::randn({I}) * 0.05, torch::randn({H}) * 0.05};
        members.push_back({experts[k].data(), &work[k], b});
      }
      // All four (9 rows of 6 tokens: every token converted once, then copied) and the first two
      // (5 rows: only the group's rows converted).
      for (const std::size_t count : {members.size(), std::size_t{2}}) {
        const std::vector<ExpertGroupMember> group(members.begin(), members.begin() + static_cast<std::ptrdiff_t>(count));
        auto one_by_one = torch::zeros({N, H});
        for (const auto& mb : group) {
          auto rows = torch::from_blob(const_cast<std::int64_t*>(mb.work->rows.data()),
                                       {static_cast<std::int64_t>(mb.work->rows.size())}, torch::kInt64);
          one_by_one.index_add_(0, rows, run_expert(L, mb.base, m, *mb.work, c, mb.bias));
        }
        auto grouped = torch::zeros({N, H});
        run_expert_group(L, group, m, c, grouped);
        EXPECT_TRUE(torch::equal(grouped, one_by_one))
            << L.format_name() << (gpt_oss ? " gpt-oss" : "") << ", " << count << " members: max diff "
            << (grouped - one_by_one).abs().max().item<float>();
        EXPECT_GT(grouped.abs().sum().item<float>(), 0.f);
      }
    }
  }
}

// A tiny model of `family` whose rows are whole blocks of every format, 8 experts, top-4 (so that
// tokens share experts and a token's contributions are more than two summands).
MoeConfig family_config(const std::string& family) {
  MoeConfig c = testing::block_config(2, 8, 256);
  c.model_type = family;
  c.top_k = 4;
  if (family == "qwen2_moe") {
    c.shared_expert_intermediate_size = 256;
    c.shared_expert_gate = true;
  }
  if (family == "deepseek_v3") c.dense_layers = {0};
  prepare_tiny_config(c);
  return tiny_model_config(c);
}

TEST(ExpertGroup, EngineLogitsEqualOneCallPerExpert) {
  torch::set_num_threads(1);
  const auto resident = [](const std::string& budget) { return budget == "100%"; };
  for (const char* family : {"mixtral", "qwen2_moe", "deepseek_v3", "gpt_oss"}) {
    TempDir dir;
    TinyModelOptions o;
    o.config = family_config(family);
    o.seed = 7;
    make_tiny_model(dir.path(), o);
    // Every format on Mixtral; on the other families (whose differences are outside the experts'
    // matrices: shared experts, biases, the clamped SwiGLU) float32 and two block formats.
    const bool all = std::string(family) == "mixtral";
    for (const char* weights : {"", "F16", "BF16", "Q8_0", "Q4_0", "Q4_K", "Q6_K", "MXFP4"}) {
      const std::string w = weights;
      if (!all && w != "" && w != "Q4_K" && w != "MXFP4") continue;
      for (int batch : {1, 16}) {
        const auto seqs = testing::random_tokens(batch, testing::kPrompt + testing::kDecode, 3 + batch);
        // Every expert resident; half of them under on-demand loading and under LRU.
        for (const auto& [policy, budget] : {std::pair{"lru", "100%"}, {"ondemand", "50%"}, {"lru", "50%"}}) {
          std::vector<float> logits[2];
          std::uint64_t grouped[2] = {};
          for (const bool group : {false, true}) {
            EngineOptions eo;
            eo.policy = policy;
            eo.device_mem = budget;
            eo.preload = resident(budget);
            eo.link = "4GBps,5us";
            eo.weights = weights;
            eo.group_experts = group;
            auto eng = MoeEngine::open(dir.path(), eo);
            logits[group] = testing::run_logits(*eng, seqs);
            grouped[group] = eng->stats().grouped_calls;
          }
          const std::string what = std::string(family) + " " + (*weights ? weights : "F32") + " batch " +
                                   std::to_string(batch) + " " + policy + " " + budget;
          EXPECT_EQ(grouped[0], 0u) << what;
          // The groups did run (under half the budget a step may find no two hits side by side).
          if (resident(budget)) {
            EXPECT_GT(grouped[1], 0u) << what;
          }
          ASSERT_EQ(logits[0].size(), logits[1].size()) << what;
          std::size_t differ = 0;
          for (std::size_t i = 0; i < logits[0].size(); ++i) differ += logits[0][i] != logits[1][i];
          EXPECT_EQ(differ, 0u) << what;
        }
      }
    }
  }
}

}  // namespace
}  // namespace ferry::moe
