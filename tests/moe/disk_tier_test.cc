// The disk tier (--link file) on a GGUF file (Mixtral's layers, DeepSeek-V3's and GLM-4.5's): the
// experts stream from the file with O_DIRECT in the blocks the file stores (the bytes a link moves
// are the quantized bytes), into a budget the device never exceeds. Checked against the all-in-memory engine on the same file: placement never
// changes the arithmetic, so every policy and budget gives the same floats bit for bit. A file cut
// or rewritten while its experts stream from it is an error naming the file, never a crash.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <torch/utils.h>

#include "core/error.h"
#include "moe/engine/engine.h"
#include "moe/model/family.h"
#include "moe/model/gguf_export.h"
#include "moe/model/tiny_model.h"
#include "moe/quant/quant_mix.h"
#include "engine_test_util.h"
#include "moe_test_util.h"

namespace ferry::moe {
namespace {

using testing::TempDir;

// Rows of 256 weights: whole blocks of every format, K-quants included; 4 layers, so that
// Q4_K_M's ffn_down changes type from layer to layer (Q6_K in some, Q4_K in the others).
MoeConfig disk_config() { return testing::block_config(4, 6); }

class DiskTierTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    torch::set_num_threads(1);
    dir_ = new TempDir();
    TinyModelOptions o;
    o.config = disk_config();
    o.seed = 11;
    make_tiny_model(dir_->path() + "/model", o);
    for (const char* type : {"Q8_0", "Q4_0", "Q4_K_M", "MXFP4_MOE"}) {
      GgufExportOptions g;
      g.file_type = *quant::parse_llama_file_type(type);
      g.threads = 1;
      export_gguf(dir_->path() + "/model", gguf(type), g);
    }
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::string gguf(const std::string& type) { return dir_->path() + "/" + type + ".gguf"; }
  static TempDir* dir_;
};
TempDir* DiskTierTest::dir_ = nullptr;

// Every policy, under a budget of two experts and of half of them, streaming `gguf`'s experts from
// the file: the logits of `seqs` equal the all-in-memory engine's bit for bit, the budget holds,
// bytes move; on demand, each load reads one expert as the file stores it. `what` names the file.
void expect_every_policy_equals_the_in_memory_engine(const std::string& gguf, const TokenBatch& seqs,
                                                      const std::string& what, bool uniform_expert_bytes) {
  EngineOptions all_in;
  all_in.policy = "lru";
  all_in.device_mem = "100%";
  all_in.link = "none";
  auto mem = MoeEngine::open(gguf, all_in);
  const std::vector<float> expect = testing::run_logits(*mem, seqs);
  const std::uint64_t slot = mem->expert_bytes();
  for (const char* policy : {"ondemand", "lru", "static-hot", "next-gate", "fiddler", "moe-infinity", "prescope",
                             "prescope:speculate=0"})
    for (const std::string& budget : {std::to_string(2 * slot + 7), std::string("50%")}) {
      EngineOptions o;
      o.policy = policy;
      o.device_mem = budget;
      o.link = "file";
      o.chunk_bytes = 4096;  // several chunks per expert: transfers are cut and resumed
      auto eng = MoeEngine::open(gguf, o);
      EXPECT_EQ(eng->expert_bytes(), slot) << what;
      EXPECT_EQ(testing::run_logits(*eng, seqs), expect) << what << " " << policy << " budget " << budget;
      const auto s = eng->stats();
      EXPECT_LE(s.store.peak_bytes, s.budget_bytes) << what << " " << policy << " " << budget;
      EXPECT_GT(s.store.bytes_moved, 0u) << what << " " << policy;
      // On demand: each load reads one expert's bytes as the file stores them (its layer's
      // ffn_down type in Q4_K_M), and nothing else.
      if (std::string(policy) == "ondemand") {
        EXPECT_LE(s.store.bytes_moved, s.store.loads * slot) << what;
        if (uniform_expert_bytes) {
          EXPECT_EQ(s.store.bytes_moved, s.store.loads * slot) << what;
        }
      }
    }
}

TEST_F(DiskTierTest, EveryPolicyAndBudgetEqualsTheInMemoryEngine) {
  for (const char* type : {"Q8_0", "Q4_0", "Q4_K_M", "MXFP4_MOE"})
    for (int batch : {1, 3})
      expect_every_policy_equals_the_in_memory_engine(
          gguf(type), testing::random_tokens(batch, testing::kPrompt + testing::kDecode, 70 + batch), type,
          std::string(type) != "Q4_K_M");
}

// The same on the families whose layers are not Mixtral's, each a Q8_0 file of tiny shapes:
// DeepSeek-V3 (latent attention with the q bottleneck, two groups of experts chosen through a
// bias, a shared expert, a dense first layer) and GLM-4.5 (partial rotary, q/k/v biases, the
// same routing, a shared expert and a dense first layer), and gpt-oss (expert biases, resident
// while the experts' weights stream; sinks, sliding layers), gpt-oss also in MXFP4_MOE and as
// llama.cpp's converter writes its MXFP4 checkpoints (the experts' blocks as they are, the rest F32).
TEST(DiskTierFamilies, EveryPolicyAndBudgetEqualsTheInMemoryEngine) {
  torch::set_num_threads(1);
  for (const std::string family : {"deepseek_v3", "glm4_moe", "gpt_oss"}) {
    TempDir tmp;
    const bool grouped = family != "gpt_oss";  // gpt-oss has no groups, shared expert or dense layer
    MoeConfig c = testing::tiny_config();
    c.model_type = family;
    c.hidden_size = 64;  // rows of whole Q8_0 blocks, MLA's (qk_nope_head_dim 32) included
    c.intermediate_size = 64;
    c.head_dim = 64;
    if (grouped) c.dense_layers = {0};
    if (family == "deepseek_v3") c.q_lora_rank = 32;
    c.n_group = c.topk_group = 0;  // the family's tiny default: two groups, one used
    if (!grouped) c.sliding_window = 3;  // shorter than the sequences
    prepare_tiny_config(c);
    if (grouped) {
      ASSERT_EQ(c.n_group, 2) << family;
      ASSERT_GT(c.shared_expert_intermediate_size, 0) << family;
    }
    TinyModelOptions t;
    t.config = c;
    t.seed = 5;
    make_tiny_model(tmp / "m", t);
    GgufExportOptions g;
    g.threads = 1;
    std::vector<std::pair<std::string, quant::LlamaFileType>> files = {{"m", quant::LlamaFileType::kMostlyQ8_0}};
    if (!grouped) {
      files.push_back({"m", quant::LlamaFileType::kMostlyMXFP4_MOE});
      t.config.mxfp4_experts = true;
      make_tiny_model(tmp / "mx", t);
      files.push_back({"mx", quant::LlamaFileType::kAllF32});
    }
    for (const auto& [model, type] : files) {
      g.file_type = type;
      const std::string path = tmp / (model + "-" + quant::llama_file_type_name(type) + ".gguf");
      export_gguf(tmp / model, path, g);
      expect_every_policy_equals_the_in_memory_engine(
          path, testing::random_tokens(2, testing::kPrompt + testing::kDecode, 17), family + " " + path, true);
    }
  }
}

// static-hot on the disk tier, where a cold expert needs a slot too: with counts that make
// experts 0 and 1 of every layer the hot ones and a budget of those 8 plus one layer's 6, every
// access to a hot expert is a hit (they are loaded at the start and cold loads never evict
// them), at a batch that routes to most of a layer's experts. Before, the hot set took every
// slot and the first cold loads evicted it.
// Several reads in flight (--link file:reads=N, chunk_readers.h) deliver the same bytes as one:
// under every depth, budget and a policy that pre-empts prefetches, the logits equal the
// all-in-memory engine's bit for bit, and the bytes moved are those of one read at a time.
TEST_F(DiskTierTest, EveryReadDepthEqualsTheInMemoryEngine) {
  for (const char* type : {"Q8_0", "Q4_K_M"}) {
    EngineOptions all_in;
    all_in.policy = "lru";
    all_in.device_mem = "100%";
    all_in.link = "none";
    auto mem = MoeEngine::open(gguf(type), all_in);
    const TokenBatch seqs = testing::random_tokens(2, testing::kPrompt + testing::kDecode, 33);
    const std::vector<float> expect = testing::run_logits(*mem, seqs);
    const std::uint64_t slot = mem->expert_bytes();
    for (const char* policy : {"lru", "next-gate", "prescope"})
      for (const std::string& budget : {std::to_string(2 * slot + 7), std::string("50%")}) {
        std::uint64_t one_read_bytes = 0;
        for (int reads : {1, 2, 3, 8}) {
          EngineOptions o;
          o.policy = policy;
          o.device_mem = budget;
          o.link = "file:reads=" + std::to_string(reads);
          o.chunk_bytes = 4096;  // several chunks per expert: many in flight, transfers cut and resumed
          auto eng = MoeEngine::open(gguf(type), o);
          const std::string what =
              std::string(type) + " " + policy + " budget " + budget + " reads " + std::to_string(reads);
          EXPECT_EQ(testing::run_logits(*eng, seqs), expect) << what;
          const auto s = eng->stats();
          EXPECT_LE(s.store.peak_bytes, s.budget_bytes) << what;
          if (reads == 1) one_read_bytes = s.store.bytes_moved;
          if (std::string(policy) == "lru") {
            EXPECT_EQ(s.store.bytes_moved, one_read_bytes) << what;
          }
        }
      }
  }
}

TEST_F(DiskTierTest, StaticHotKeepsItsHotExpertsWhileColdOnesStream) {
  const MoeConfig c = disk_config();
  const int layers = static_cast<int>(c.num_layers), experts = static_cast<int>(c.num_experts);
  EngineOptions o;
  o.policy = "static-hot";
  o.link = "file";
  o.policy_inputs.expert_counts.assign(static_cast<std::size_t>(layers) * experts, 1);
  for (int l = 0; l < layers; ++l)
    for (int e : {0, 1}) o.policy_inputs.expert_counts[static_cast<std::size_t>(l) * experts + e] = 1000;
  {
    EngineOptions probe;
    probe.link = "none";
    probe.device_mem = "100%";
    const std::uint64_t slot = MoeEngine::open(gguf("Q8_0"), probe)->expert_bytes();
    o.device_mem = std::to_string((2 * layers + experts) * slot + 7);
  }
  auto eng = MoeEngine::open(gguf("Q8_0"), o);
  testing::run_logits(*eng, testing::random_tokens(4, testing::kPrompt + testing::kDecode, 91));
  const EngineStats s = eng->stats();
  std::uint64_t hot_accesses = 0;
  for (int l = 0; l < layers; ++l)
    for (int e : {0, 1}) hot_accesses += s.expert_counts[static_cast<std::size_t>(l) * experts + e];
  EXPECT_GT(hot_accesses, 0u);
  EXPECT_GT(s.expert_accesses, hot_accesses);  // cold experts were routed to as well
  EXPECT_GE(s.hits, hot_accesses) << "of " << s.expert_accesses << " accesses";
}

TEST_F(DiskTierTest, ConvertingWhileStreamingIsRefused) {
  EngineOptions o;
  o.link = "file";
  o.device_mem = "50%";
  o.weights = "Q4_0";
  try {
    MoeEngine::open(gguf("Q8_0"), o);
    ADD_FAILURE() << "--link file with --weights of another type than the file's";
  } catch (const InvalidArgument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("as the file stores them (Q8_0)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("--weights Q4_0"), std::string::npos) << msg;
  }
}

// Decodes until the engine throws (the file was changed under it); returns the message.
std::string decode_until_error(MoeEngine& eng) {
  for (int t = 0; t < 64; ++t) {
    try {
      eng.forward(TokenBatch{{static_cast<std::int32_t>(t * 37 % 256)}});
    } catch (const Error& e) {
      return e.what();
    }
  }
  return "";
}

TEST_F(DiskTierTest, AFileCutOrRewrittenMidRunIsAnErrorNamingIt) {
  for (bool cut : {true, false}) {
    TempDir tmp;
    const std::string path = tmp.path() + "/m.gguf";
    std::filesystem::copy_file(gguf("Q4_0"), path);
    EngineOptions o;
    o.policy = "ondemand";  // every step reads from the file
    o.link = "file";
    EngineOptions probe;
    probe.link = "none";
    probe.device_mem = "100%";
    o.device_mem = std::to_string(2 * MoeEngine::open(gguf("Q4_0"), probe)->expert_bytes());
    auto eng = MoeEngine::open(path, o);
    eng->forward(TokenBatch{{1, 2, 3}}, true);  // the file as opened: fine
    const auto size = std::filesystem::file_size(path);
    if (cut) {
      std::filesystem::resize_file(path, size / 2);
    } else {
      std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(static_cast<std::streamoff>(size - 100));
      f.put('\x7f');
    }
    const std::string msg = decode_until_error(*eng);
    ASSERT_FALSE(msg.empty()) << (cut ? "cut" : "rewritten") << ": no error";
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find("changed while its experts were streaming"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace ferry::moe
