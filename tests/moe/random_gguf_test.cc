// `ferry moe make-tiny --gguf TYPE` (moe/model/random_gguf.h): the file has exactly the tensors
// (names, dims, types) and metadata keys that make-tiny followed by export_gguf writes for the
// same config and file type, opens as a model, is a function of its seed, holds weights of
// make-tiny's scale after dequantization, and its SentencePiece-style vocabulary round-trips text
// through ferry's GGUF tokenizer.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "moe/model/checkpoint.h"
#include "moe/model/family.h"
#include "moe/model/gguf_export.h"
#include "moe/model/gguf_model.h"
#include "moe/model/random_gguf.h"
#include "moe/model/tiny_model.h"
#include "moe/quant/gguf_file.h"
#include "moe/serve/server.h"
#include "moe/tokenizer/gguf_tokenizer.h"
#include "moe_test_util.h"

namespace ferry::moe {
namespace {

using quant::GgufFile;
using quant::LlamaFileType;
using quant::QuantType;
using testing::file_bytes;
using testing::TempDir;

// Rows of 256 (hidden) and 512 (expert width), whole K-quant super-blocks, so that Q4_K_M's mix
// keeps its K types; expert width != hidden so that w1 and w2 have different scales.
MoeConfig random_config() {
  MoeConfig c = testing::block_config(2, 4, 512);
  prepare_tiny_config(c);
  return c;
}

std::string write_random(const TempDir& tmp, const std::string& name, const MoeConfig& c, LlamaFileType type,
                         std::uint64_t seed = 5) {
  RandomGgufOptions o;
  o.config = c;
  o.seed = seed;
  o.gguf.file_type = type;
  o.gguf.threads = 2;
  const std::string path = tmp / name;
  write_random_gguf(path, o);
  return path;
}

std::set<std::string> metadata_keys(const GgufFile& f) {
  std::set<std::string> keys;
  for (const auto& [key, value] : f.metadata()) keys.insert(key);
  return keys;
}

TEST(RandomGguf, SameTensorsTypesAndKeysAsMakeTinyThenExport) {
  const TempDir tmp;
  const MoeConfig c = random_config();
  TinyModelOptions tiny;
  tiny.config = c;
  make_tiny_model(tmp / "model", tiny);
  for (LlamaFileType type :
       {LlamaFileType::kAllF32, LlamaFileType::kMostlyQ8_0, LlamaFileType::kMostlyQ4_0, LlamaFileType::kMostlyQ4_K_M}) {
    SCOPED_TRACE(quant::llama_file_type_name(type));
    GgufExportOptions o;
    o.file_type = type;
    o.threads = 2;
    const std::string exported = tmp / "exported.gguf";
    export_gguf(tmp / "model", exported, o);
    const std::string random = write_random(tmp, "random.gguf", c, type);
    const GgufFile want = GgufFile::open(exported), got = GgufFile::open(random);
    ASSERT_EQ(got.tensors().size(), want.tensors().size());
    std::set<QuantType> types;
    for (std::size_t k = 0; k < want.tensors().size(); ++k) {
      const quant::GgufTensor &w = want.tensors()[k], &g = got.tensors()[k];
      EXPECT_EQ(g.name, w.name);
      EXPECT_EQ(g.dims, w.dims) << w.name;
      EXPECT_EQ(g.type, w.type) << w.name;
      types.insert(g.type);
    }
    if (type == LlamaFileType::kMostlyQ4_K_M) {  // the mix, not one type
      EXPECT_TRUE(types.count(QuantType::kQ4_K));
      EXPECT_TRUE(types.count(QuantType::kQ6_K));
    }
    EXPECT_EQ(metadata_keys(got), metadata_keys(want));
    EXPECT_EQ(got.get("tokenizer.ggml.tokens").strings, want.get("tokenizer.ggml.tokens").strings);
    EXPECT_EQ(got.get_int("general.file_type"), static_cast<std::int64_t>(type));
    EXPECT_EQ(got.get_string("general.name"), "random");  // the file's stem
    // It opens as a model, with make-tiny's config.
    const std::unique_ptr<Checkpoint> model = Checkpoint::open(random);
    EXPECT_EQ(model->config().hidden_size, c.hidden_size);
    EXPECT_EQ(model->config().num_experts, c.num_experts);
  }
}

TEST(RandomGguf, SameSeedSameBytesOtherSeedOtherBytes) {
  const TempDir tmp, tmp1, tmp2;  // the same file name (general.name) in each
  const MoeConfig c = random_config();
  const auto a = file_bytes(write_random(tmp, "a.gguf", c, LlamaFileType::kMostlyQ4_K_M, 11));
  RandomGgufOptions o;  // another thread count: the same bytes
  o.config = c;
  o.seed = 11;
  o.gguf.file_type = LlamaFileType::kMostlyQ4_K_M;
  o.gguf.threads = 1;
  write_random_gguf(tmp1 / "a.gguf", o);
  const auto b = file_bytes(write_random(tmp2, "a.gguf", c, LlamaFileType::kMostlyQ4_K_M, 12));
  EXPECT_EQ(a, file_bytes(tmp1 / "a.gguf"));
  ASSERT_EQ(a.size(), b.size());
  EXPECT_NE(a, b);
}

// Mean and standard deviation of an HF tensor, dequantized.
std::pair<double, double> moments(const GgufModel& m, const std::string& hf) {
  std::int64_t n = 1;
  for (auto d : m.shape(hf)) n *= d;
  std::vector<float> v(static_cast<std::size_t>(n));
  m.read_f32(hf, v.data());
  double sum = 0, sq = 0;
  for (float x : v) sum += x;
  const double mean = sum / static_cast<double>(n);
  for (float x : v) sq += (x - mean) * (x - mean);
  return {mean, std::sqrt(sq / static_cast<double>(n))};
}

// Expected: make-tiny's σ (1/√fan_in; 1 for the embedding). Bound: the sample std of n normal
// draws has relative error ~1/√(2n) (n = 131072 for w1: 0.2%; the pool it is drawn from, 131072
// values for Q8_0, as much again); 4-bit quantization adds noise of (step²/12) with step ≈ 4σ/15,
// +0.4% of σ. 5% is over ten standard errors yet catches a wrong fan-in (w1 vs w2: 41%).
TEST(RandomGguf, DequantizedWeightsHaveMakeTinyScale) {
  const TempDir tmp;
  const MoeConfig c = random_config();
  const TensorNames names(c);
  for (LlamaFileType type : {LlamaFileType::kMostlyQ8_0, LlamaFileType::kMostlyQ4_0, LlamaFileType::kMostlyQ4_K_M}) {
    SCOPED_TRACE(quant::llama_file_type_name(type));
    const auto m = GgufModel::open(write_random(tmp, "m.gguf", c, type));
    const auto expect_normal = [&](const std::string& hf, double mean, double stddev) {
      const auto [got_mean, got_std] = moments(*m, hf);
      EXPECT_NEAR(got_mean, mean, 0.05 * stddev) << hf;
      EXPECT_NEAR(got_std / stddev, 1.0, 0.05) << hf;
    };
    expect_normal(names.expert(0, 0, 1), 0, 1 / std::sqrt(256.0));
    expect_normal(names.expert(1, 3, 2), 0, 1 / std::sqrt(512.0));
    expect_normal(names.attn(1, 'q'), 0, 1 / std::sqrt(256.0));
    expect_normal(names.embed(), 0, 1);
    const auto [norm_mean, norm_std] = moments(*m, names.attn_norm(0));
    EXPECT_NEAR(norm_mean, 1.0, 0.02);
    EXPECT_GT(norm_std, 0.02);
    EXPECT_LT(norm_std, 0.08);
  }
}

TEST(RandomGguf, SentencePieceVocabularyRoundTrips) {
  const TempDir tmp;
  MoeConfig c = testing::tiny_config();
  c.tokenizer.clear();
  c.vocab_size = 32000;
  c.intermediate_size = 64;  // whole Q8_0 blocks
  prepare_tiny_config(c);
  const GgufFile f = GgufFile::open(write_random(tmp, "v.gguf", c, LlamaFileType::kMostlyQ8_0));
  EXPECT_EQ(f.get_string("tokenizer.ggml.model"), "llama");
  const std::vector<std::string>& tokens = f.get("tokenizer.ggml.tokens").strings;
  ASSERT_EQ(tokens.size(), 32000u);
  EXPECT_EQ(std::set<std::string>(tokens.begin(), tokens.end()).size(), tokens.size());  // unique
  EXPECT_EQ(tokens[0], "<unk>");
  EXPECT_EQ(tokens[1], "<s>");
  EXPECT_EQ(tokens[2], "</s>");
  EXPECT_EQ(tokens[3 + 0x41], "<0x41>");
  EXPECT_EQ(f.get("tokenizer.ggml.token_type").numbers[3 + 0x41], static_cast<double>(TokenType::kByte));
  EXPECT_EQ(f.get_int("tokenizer.ggml.bos_token_id"), 1);
  EXPECT_EQ(f.get_int("tokenizer.ggml.eos_token_id"), 2);

  const std::unique_ptr<Tokenizer> tok = load_gguf_tokenizer(f);
  EXPECT_EQ(tok->vocab_size(), 32000);
  EXPECT_EQ(tok->bos_id(), 1);
  for (const std::string text : {"hello world", "The quick brown fox, 42 times!", "caf\xC3\xA9 \xE2\x82\xAC 7"}) {
    const std::vector<std::int32_t> ids = tok->encode(text);
    EXPECT_EQ(tok->decode(ids), text);
    for (std::int32_t id : ids) EXPECT_NE(id, 0) << text;  // no <unk>: bytes fall back to <0xXX>
  }
  // Lowercase words are merged into pieces, not spelled in bytes.
  EXPECT_LE(tok->encode("hello world").size(), 4u);
  // Vocabularies the file cannot hold.
  EXPECT_THROW(random_gguf_vocabulary(258), InvalidArgument);
  EXPECT_THROW(random_gguf_vocabulary(100), InvalidArgument);
  EXPECT_EQ(random_gguf_vocabulary(260).tokens.back(), "\xE2\x96\x81");
}

// A server on a GGUF file stops where llama.cpp does: at the tokenizer's end tokens in the file
// (there is no generation_config.json beside it); an id outside the vocabulary is refused.
TEST(RandomGguf, ServerStopsAtTheFilesEndTokens) {
  const TempDir tmp;
  MoeConfig c = random_config();
  c.vocab_size = 300;  // a SentencePiece-style vocabulary, whose </s> the file names (ferry's bytes have none)
  const std::string path = write_random(tmp, "m.gguf", c, LlamaFileType::kAllF32);
  const GgufFile file = GgufFile::open(path);
  ASSERT_NE(file.find("tokenizer.ggml.eos_token_id"), nullptr);
  const auto eos = static_cast<std::int32_t>(file.get_int("tokenizer.ggml.eos_token_id"));
  EXPECT_EQ(read_eos_ids(path, static_cast<int>(c.vocab_size)), std::vector<std::int32_t>{eos});
  EXPECT_THROW(read_eos_ids(path, eos), FormatError);
}

}  // namespace
}  // namespace ferry::moe
