// The engine on quantized experts (EngineOptions::weights): the experts are stored, budgeted and
// moved in their block format, and computed on the blocks. Checked against two oracles:
//  - placement never changes the math: every policy, budget and batch gives bit-identical logits
//    for one format, and the device never holds more quantized bytes than the budget;
//  - the reference forward on the same blocks (a checkpoint whose experts are the dequantized
//    blocks): equal within 1e-4 where the activations stay float (F16, BF16), and within the
//    error of the kernels' 8-bit activations for the Q formats (bound in the test).
#include <filesystem>
#include <regex>

#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>

#include "core/error.h"
#include "moe/engine/engine.h"
#include "moe/model/checkpoint.h"
#include "moe/model/safetensors.h"
#include "moe/model/tiny_model.h"
#include "moe/quant/dequantize.h"
#include "moe/quant/quantize.h"
#include "engine_test_util.h"
#include "moe_test_util.h"

namespace ferry::moe {
namespace {

using testing::TempDir;

using testing::kDecode;
using testing::kPrompt;

MoeConfig quant_config() { return testing::block_config(2, 6, 512); }  // rows of 256 and 512 weights

// A copy of the checkpoint in `src` whose routed experts are quantized to `format` and back.
void write_dequantized_experts(const std::string& src, const std::string& dst, quant::QuantType format) {
  std::filesystem::create_directories(dst);
  for (const auto& entry : std::filesystem::directory_iterator(src))
    if (entry.path().extension() != ".safetensors") std::filesystem::copy(entry.path(), dst + "/" + entry.path().filename().string());
  auto ck = Checkpoint::open(src);
  const std::regex expert(R"(\.experts\.\d+\.)");
  SafetensorsWriter w;
  for (const auto& f : ck->files())
    for (const auto& t : f->tensors()) {
      std::vector<float> v(static_cast<std::size_t>(t.numel()));
      ck->read_f32(t.name, t.shape, v.data());
      if (std::regex_search(t.name, expert)) {
        std::vector<std::byte> q(quant::quant_row_bytes(format, v.size()));
        quant::quantize_row(format, v.data(), q.data(), v.size());
        quant::dequantize_row(format, q.data(), v.data(), v.size());
      }
      w.add_f32(t.name, DType::kF32, t.shape, v.data());
    }
  w.write(dst + "/model.safetensors");
}

class QuantEngineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    torch::set_num_threads(1);
    dir_ = new TempDir();
    TinyModelOptions o;
    o.config = quant_config();
    o.seed = 5;
    make_tiny_model(dir_->path() + "/model", o);
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::string model() { return dir_->path() + "/model"; }
  static TempDir* dir_;
};
TempDir* QuantEngineTest::dir_ = nullptr;

TEST_F(QuantEngineTest, EveryPolicyAndBudgetComputesTheSameBlocks) {
  for (const char* weights : {"Q4_0", "Q4_K", "Q8_0", "Q6_K", "MXFP4", "BF16"}) {
    const auto format = *quant::parse_quant_type(weights);
    const std::uint64_t eb = 2 * quant::quant_matrix_bytes(format, 512, 256) + quant::quant_matrix_bytes(format, 256, 512);
    const std::string ref_dir = dir_->path() + "/ref_" + weights;
    write_dequantized_experts(model(), ref_dir, format);
    for (int batch : {1, 3}) {
      auto seqs = testing::random_tokens(batch, kPrompt + kDecode, 40 + batch);
      const auto expect = testing::reference_logits(ref_dir, seqs);
      float max_logit = 0;
      for (float v : expect) max_logit = std::max(max_logit, std::fabs(v));
      std::vector<float> first;
      for (const char* policy : {"ondemand", "lru", "fiddler", "prescope"})
        for (const std::string& budget : {std::to_string(2 * eb + 7), std::string("50%"), std::string("100%")}) {
          EngineOptions o;
          o.policy = policy;
          o.device_mem = budget;
          o.link = "2GBps,5us";
          o.chunk_bytes = 4096;
          o.weights = weights;
          auto eng = MoeEngine::open(model(), o);
          EXPECT_EQ(eng->expert_bytes(), eb) << weights;
          // Collect all logits of the run (prompt, then decode steps).
          const double diff = testing::max_diff_vs(*eng, seqs, expect, kPrompt);
          const auto s = eng->stats();
          EXPECT_LE(s.store.peak_bytes, s.budget_bytes) << weights << " " << policy << " " << budget;
          // On-demand loading neither prefetches nor cancels: every load moves one whole quantized
          // expert. (Other policies' cancelled prefetches count the part they moved.)
          if (std::string(policy) == "ondemand") {
            EXPECT_EQ(s.store.bytes_moved, s.store.loads * eb) << weights;
          }
          // Float activations (F16, BF16): the reference's arithmetic up to summation order. Q
          // formats: 8-bit activations add at most half a step (max|x|/254 per block) to every
          // input of every expert; through two layers that stays under 5% of the largest logit
          // (measured here: about 1%), far below what a misread block (a wrong scale or nibble
          // order, the errors this catches) does to the logits.
          const double bound = format == quant::QuantType::kBF16 ? 1e-4 : 0.05 * max_logit;
          EXPECT_LT(diff, bound) << weights << " " << policy << " budget " << budget << " batch " << batch;
          // The same tokens through any placement give the same floats.
          eng->reset();
          TokenBatch prompt(batch);
          for (int b = 0; b < batch; ++b) prompt[b].assign(seqs[b].begin(), seqs[b].begin() + kPrompt);
          auto logits = eng->forward(prompt, true);
          if (first.empty())
            first = logits;
          else
            EXPECT_EQ(logits, first) << weights << " " << policy << " budget " << budget;
        }
      first.clear();
    }
  }
}

TEST_F(QuantEngineTest, RowsThatAreNotWholeBlocksAreRefused) {
  TempDir small;
  TinyModelOptions o;
  o.config = testing::tiny_config();  // hidden 32, intermediate 48
  make_tiny_model(small.path(), o);
  EngineOptions eo;
  eo.weights = "Q4_K";
  try {
    MoeEngine::open(small.path(), eo);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("experts in Q4_K need hidden_size and intermediate_size that are multiples of 256"),
              std::string::npos)
        << e.what();
  }
  eo.weights = "Q5_1";
  try {
    MoeEngine::open(small.path(), eo);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("--weights 'Q5_1': expected one of F32"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ferry::moe
