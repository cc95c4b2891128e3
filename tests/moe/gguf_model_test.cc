// A GGUF file as a model (`--model FILE.gguf`, moe/model/gguf_model.h): for each family ferry
// exports, a tiny checkpoint written by `ferry moe quantize` and opened again:
//  - F32: the config equal to the checkpoint's, every tensor bit-identical (q/k un-permuted), and
//    the engine's logits on the file bit-identical to the engine's on the directory (the same
//    floats reach the same code);
//  - Q8_0 / Q4_0 pure: the host pool's expert blocks byte for byte those the pool quantizes from
//    the directory with --weights, every dense tensor the dequantized reference quantizer's output
//    of the checkpoint's, and the engine's logits bit-identical to the engine on a directory that
//    holds the file's dequantized weights with the same --weights;
//  - Q4_K_M: w2 in Q6_K and w1/w3 in Q4_K in one expert (a format per projection), copied as stored;
//  - a bad file, an unknown "<arch>." key, a type the kernels do not compute: one error naming it;
//  - the tokenizer stored in the file.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <tuple>
#include <utility>

#include <nlohmann/json.hpp>
#include <torch/types.h>
#include <torch/utils.h>

#include "core/error.h"
#include "moe/engine/engine.h"
#include "moe/model/checkpoint.h"
#include "moe/model/family.h"
#include "moe/model/gguf_export.h"
#include "moe/model/gguf_layout.h"
#include "moe/model/safetensors.h"
#include "moe/model/tiny_model.h"
#include "moe/model/weights.h"
#include "moe/quant/dequantize.h"
#include "moe/quant/gguf_file.h"
#include "moe/quant/gguf_writer.h"
#include "moe/quant/quantize.h"
#include "moe/quant/row_groups.h"
#include "moe/store/host_pool.h"
#include "moe/tokenizer/byte_level.h"
#include "moe/tokenizer/tokenizer.h"
#include "engine_test_util.h"
#include "bpe_test_util.h"
#include "moe_test_util.h"

namespace ferry::moe {
namespace {

using quant::GgufFile;
using quant::LlamaFileType;
using quant::QuantType;
using testing::TempDir;

// The tiny model of each family, in a shape its llama.cpp architecture holds (gguf_export_test.cc's)
// and with the values the file carries: norm_topk_prob as the architecture hard-codes it, the RMS
// epsilon OLMoE's converter writes. Rows of 32 and 64: whole Q8_0/Q4_0 blocks.
MoeConfig loadable_config(const std::string& family) {
  MoeConfig c = testing::tiny_config();
  c.model_type = family;
  c.intermediate_size = 64;
  if (family == "qwen2_moe") {
    c.shared_expert_intermediate_size = 32;
    c.shared_expert_gate = true;
  }
  if (family == "olmoe") c.num_kv_heads = c.num_heads;
  if (family == "deepseek") {
    c.dense_layers = {0};
    c.shared_expert_intermediate_size = 2 * c.intermediate_size;
  }
  prepare_tiny_config(c);
  c.norm_topk_prob = family == "mixtral" || family == "qwen3_moe";
  c.rms_norm_eps = 1e-5;
  return c;
}

std::string make_model(const TempDir& tmp, const MoeConfig& c, const std::string& name) {
  const std::string dir = tmp / name;
  TinyModelOptions o;
  o.config = c;
  o.seed = 11;
  make_tiny_model(dir, o);
  return dir;
}

std::string export_model(const std::string& dir, const std::string& out, LlamaFileType type, bool pure) {
  GgufExportOptions o;
  o.file_type = type;
  o.pure = pure;
  o.threads = 1;
  export_gguf(dir, out, o);
  return out;
}

std::vector<float> read_all(const Checkpoint& ck, const TensorInfo& t) {
  std::vector<float> v(static_cast<std::size_t>(t.numel()));
  ck.read_f32(t.name, t.shape, v.data());
  return v;
}

// Every position's logits of two prompts (all experts resident: placement does not change the math).
std::vector<float> engine_logits(const std::string& model, const std::string& weights, bool dense_as_stored = true) {
  EngineOptions o;
  o.device_mem = "100%";
  o.weights = weights;
  o.dense_as_stored = dense_as_stored;
  auto eng = MoeEngine::open(model, o);
  return eng->forward(testing::random_tokens(2, 9, 3), true);
}

// A checkpoint directory holding what the GGUF file `gguf` holds, as float32 (its dequantized
// weights, q/k un-permuted), next to a copy of the original config.json.
std::string write_dequantized_dir(const std::string& gguf, const std::string& config_dir, const std::string& out) {
  std::filesystem::create_directories(out);
  std::filesystem::copy(config_dir + "/config.json", out + "/config.json");
  auto ck = Checkpoint::open(config_dir), g = Checkpoint::open(gguf);
  SafetensorsWriter w;
  for (const auto& f : ck->files())
    for (const auto& t : f->tensors()) {
      std::vector<float> v(static_cast<std::size_t>(t.numel()));
      g->read_f32(t.name, t.shape, v.data());
      w.add_f32(t.name, DType::kF32, t.shape, v.data());
    }
  w.write(out + "/model.safetensors");
  return out;
}

class GgufModelFamily : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { torch::set_num_threads(1); }
};

TEST_P(GgufModelFamily, F32FileIsTheCheckpoint) {
  TempDir tmp;
  const std::string dir = make_model(tmp, loadable_config(GetParam()), "m");
  const std::string gguf = export_model(dir, tmp / "m.gguf", LlamaFileType::kAllF32, false);
  auto ck = Checkpoint::open(dir), g = Checkpoint::open(gguf);
  ASSERT_NE(g->gguf(), nullptr);
  EXPECT_EQ(config_to_json(g->config()), config_to_json(ck->config()));
  EXPECT_EQ(config_to_json(load_config(gguf)), config_to_json(ck->config()));
  std::size_t tensors = 0;
  for (const auto& f : ck->files())
    for (const auto& t : f->tensors()) {
      ASSERT_TRUE(g->contains(t.name)) << t.name;
      const auto a = read_all(*ck, t), b = read_all(*g, t);
      EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0) << t.name;  // bit-exact, q/k un-permuted
      ++tensors;
    }
  EXPECT_GT(tensors, 10u);
  EXPECT_EQ(HostPool::load(*g)->layout().format, QuantType::kF32);  // as stored
  // The same floats reach the same code: the logits are bit-identical (bound 0).
  EXPECT_EQ(engine_logits(gguf, ""), engine_logits(dir, ""));
  EXPECT_EQ(load_tokenizer(gguf, g->config().tokenizer, g->config().vocab_size)->name(), "byte");
}

TEST_P(GgufModelFamily, PureQ8_0AndQ4_0ExpertsAreCopiedAsStored) {
  TempDir tmp;
  const std::string dir = make_model(tmp, loadable_config(GetParam()), "m");
  auto ck = Checkpoint::open(dir);
  for (auto [type, format] : {std::pair{LlamaFileType::kMostlyQ8_0, QuantType::kQ8_0},
                              std::pair{LlamaFileType::kMostlyQ4_0, QuantType::kQ4_0}}) {
    const std::string name = quant::quant_name(format);
    const std::string gguf = export_model(dir, tmp / (name + ".gguf"), type, true);
    auto g = Checkpoint::open(gguf);
    // Experts: the file's blocks are what the pool quantizes from the directory.
    auto from_file = HostPool::load(*g), from_dir = HostPool::load(*ck, true, format);
    ASSERT_EQ(from_file->layout().format, format) << name;
    ASSERT_EQ(from_file->layout().down_format, format) << name;
    ASSERT_EQ(from_file->total_bytes(), from_dir->total_bytes()) << name;
    EXPECT_EQ(std::memcmp(from_file->expert({0, 0}), from_dir->expert({0, 0}), from_file->total_bytes()), 0) << name;
    // Dense tensors: the dequantized reference quantizer's output of the checkpoint's rows
    // (norms and routers stay F32 in the file, and exact).
    for (const auto& f : ck->files())
      for (const auto& t : f->tensors()) {
        const auto want = read_all(*ck, t), got = read_all(*g, t);
        std::vector<float> expect = want;
        const bool quantized = t.shape.size() == 2 && t.name.find("norm") == std::string::npos &&
                               t.name.find(".gate.weight") == std::string::npos && t.shape[0] > 1;
        if (quantized) {
          std::vector<std::byte> q(quant::quant_row_bytes(format, want.size()));
          quant::quantize_row(format, want.data(), q.data(), want.size());
          quant::dequantize_row(format, q.data(), expect.data(), want.size());
        }
        EXPECT_EQ(std::memcmp(got.data(), expect.data(), got.size() * 4), 0) << name << " " << t.name;
      }
    // The engine on the file with float32 dense weights = the engine on its dequantized weights
    // with the same --weights: the same expert blocks and the same dense floats, so bit-identical
    // logits.
    const std::string ref = write_dequantized_dir(gguf, dir, tmp / ("ref_" + name));
    EXPECT_EQ(engine_logits(gguf, "", false), engine_logits(ref, name)) << name;
    // As stored, the dense projections keep the file's blocks (q/k rows un-permuted, in the
    // kernels' layout): back in float they are exactly the file's dequantized values.
    const DenseWeights dense = load_dense_weights(*g);
    const MoeConfig& gc = g->config();
    TensorNames tn(gc);
    for (auto [which, weight] : {std::pair{'q', &dense.layers[0].wq}, std::pair{'k', &dense.layers[0].wk},
                                 std::pair{'o', &dense.layers[0].wo}}) {
      EXPECT_EQ(weight->type, format) << name << " " << which;
      const auto back = weight->to_float();
      std::vector<float> expect(static_cast<std::size_t>(back.numel()));
      g->read_f32(tn.attn(0, which), {weight->rows, weight->cols}, expect.data());
      EXPECT_EQ(std::memcmp(back.data_ptr<float>(), expect.data(), expect.size() * 4), 0) << name << " " << which;
    }
    // An explicit other format re-quantizes from the dequantized values.
    EXPECT_EQ(HostPool::load(*g, true, QuantType::kF16)->layout().format, QuantType::kF16);
  }
}

INSTANTIATE_TEST_SUITE_P(Families, GgufModelFamily,
                         ::testing::Values("mixtral", "qwen2_moe", "qwen3_moe", "olmoe", "deepseek"),
                         [](const auto& info) { return info.param; });

// A Mixtral of `layers` layers whose rows are whole K-quant blocks (256), 4 experts.
MoeConfig k_quant_config(int layers) {
  MoeConfig c = loadable_config("mixtral");
  c.num_layers = layers;
  c.hidden_size = 256;
  c.intermediate_size = 256;
  c.head_dim = 64;
  c.num_experts = 4;
  return c;
}

// The checkpoint of `c` in `tmp` and its Q4_K_M GGUF file: (directory, file).
std::pair<std::string, std::string> q4_k_m_model(TempDir& tmp, const MoeConfig& c) {
  const std::string dir = make_model(tmp, c, "m");
  return {dir, export_model(dir, tmp / "m.gguf", LlamaFileType::kMostlyQ4_K_M, false)};
}

// The reference quantizer's blocks of rows × cols `values` in `format`, in the kernels' layout:
// what the host pool holds for a projection stored in `format`.
std::vector<std::byte> kernel_blocks(QuantType format, const std::vector<float>& values, std::size_t rows,
                                     std::size_t cols) {
  std::vector<std::byte> q(quant::quant_matrix_bytes(format, rows, cols));
  quant::quantize_row(format, values.data(), q.data(), values.size());
  quant::to_row_groups(format, q.data(), rows, cols);
  return q;
}

// Q4_K_M of one layer: w1/w3 in Q4_K, w2 in Q6_K (use_more_bits) in one expert: a format per
// projection, each the reference quantizer's blocks of the checkpoint's rows, and the engine
// within the 8-bit activations' error of the reference forward on the dequantized weights.
TEST(GgufModel, Q4_K_MGivesAFormatPerProjection) {
  torch::set_num_threads(1);
  TempDir tmp;
  const MoeConfig c = k_quant_config(1);
  const auto [dir, gguf] = q4_k_m_model(tmp, c);
  auto ck = Checkpoint::open(dir), g = Checkpoint::open(gguf);
  auto pool = HostPool::load(*g);
  const ExpertLayout& L = pool->layout();
  ASSERT_EQ(L.format, QuantType::kQ4_K);
  ASSERT_EQ(L.down_format, QuantType::kQ6_K);
  EXPECT_EQ(L.format_name(), "Q4_K+Q6_K");
  TensorNames n(g->config());
  std::vector<float> w(256 * 256);
  for (int e = 0; e < c.num_experts; ++e)
    for (auto [which, format, offset] : {std::tuple{1, QuantType::kQ4_K, L.w1_offset()},
                                         std::tuple{3, QuantType::kQ4_K, L.w3_offset()},
                                         std::tuple{2, QuantType::kQ6_K, L.w2_offset()}}) {
      ck->read_f32(n.expert(0, e, which), {256, 256}, w.data());
      const std::vector<std::byte> q = kernel_blocks(format, w, 256, 256);
      EXPECT_EQ(std::memcmp(pool->expert({0, e}) + offset, q.data(), q.size()), 0) << e << " " << which;
    }
  const std::string ref = write_dequantized_dir(gguf, dir, tmp / "ref");
  const auto seqs = testing::random_tokens(2, 9, 3);
  const auto expect = testing::reference_logits(ref, seqs);
  float max_logit = 0;
  for (float v : expect) max_logit = std::max(max_logit, std::fabs(v));
  EngineOptions o;
  o.device_mem = "100%";
  auto eng = MoeEngine::open(gguf, o);
  EXPECT_EQ(eng->expert_bytes(), L.bytes());
  EXPECT_LT(testing::max_diff_vs(*eng, seqs, expect, 5), 0.05 * max_logit);  // as quant_engine_test's Q bound
}

// Q4_K_M of four layers: ffn_down in Q6_K in the layers llama-quantize gives more bits and Q4_K in
// the others. The pool keeps each layer's down as stored (slots sized by the widest), links move
// a layer's own bytes, and the engine at a budget of two experts over an emulated link computes
// exactly what it computes with every expert resident.
TEST(GgufModel, Q4_K_MDownFormatPerLayer) {
  torch::set_num_threads(1);
  TempDir tmp;
  const MoeConfig c = k_quant_config(4);
  const auto [dir, gguf] = q4_k_m_model(tmp, c);
  auto ck = Checkpoint::open(dir), g = Checkpoint::open(gguf);
  auto pool = HostPool::load(*g);
  const ExpertLayout& L = pool->layout();
  TensorNames n(g->config());
  ASSERT_EQ(L.layer_down.size(), 4u);
  EXPECT_EQ(L.format, QuantType::kQ4_K);
  EXPECT_EQ(L.down_format, QuantType::kQ6_K);  // the widest sizes the slots
  EXPECT_EQ(L.format_name(), "Q4_K+Q4_K/Q6_K");
  std::set<QuantType> seen;
  std::vector<float> w(256 * 256);
  for (int l = 0; l < 4; ++l) {
    const QuantType down = g->gguf()->stored_type(n.expert(l, 0, 2));
    EXPECT_EQ(L.layer_down[l], down) << "layer " << l;
    seen.insert(down);
    ck->read_f32(n.expert(l, 1, 2), {256, 256}, w.data());
    const std::vector<std::byte> q = kernel_blocks(down, w, 256, 256);
    EXPECT_EQ(L.of_layer(l).bytes(), 2 * L.up_bytes() + q.size()) << "layer " << l;
    EXPECT_EQ(std::memcmp(pool->expert({l, 1}) + L.w2_offset(), q.data(), q.size()), 0) << "layer " << l;
  }
  EXPECT_EQ(seen, (std::set<QuantType>{QuantType::kQ4_K, QuantType::kQ6_K}));
  const auto seqs = testing::random_tokens(2, 9, 3);
  EngineOptions all;
  all.device_mem = "100%";
  auto resident = MoeEngine::open(gguf, all);
  EXPECT_EQ(resident->expert_bytes(), L.bytes());
  EngineOptions small = all;
  small.device_mem = std::to_string(2 * L.bytes());
  small.link = "pcie4";
  auto offloaded = MoeEngine::open(gguf, small);
  EXPECT_EQ(offloaded->forward(seqs, true), resident->forward(seqs, true));
  EXPECT_GT(offloaded->stats().store.bytes_moved, 0u);
}

// A copy of `src` with `extra` metadata keys added (the tensors as they are).
void rewrite_gguf(const std::string& src, const std::string& dst,
                  const std::vector<std::pair<std::string, std::uint32_t>>& extra) {
  const GgufFile f = GgufFile::open(src);
  quant::GgufWriter w(f.alignment());
  for (const auto& [key, value] : f.metadata())
    if (key != "general.alignment") w.add(key, value);
  for (const auto& [key, value] : extra) w.add_u32(key, value);
  for (const auto& t : f.tensors()) {
    const auto bytes = f.data(t);
    w.add_tensor(t.name, t.dims, t.type, std::vector<std::byte>(bytes.begin(), bytes.end()));
  }
  w.write(dst);
}

TEST(GgufModel, BadFilesAreOneFormatErrorNamingThem) {
  TempDir tmp;
  const std::string dir = make_model(tmp, loadable_config("mixtral"), "m");
  const std::string gguf = export_model(dir, tmp / "m.gguf", LlamaFileType::kMostlyQ8_0, true);
  std::ifstream in(gguf, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto expect_format_error = [&](const std::string& path, const std::string& needle) {
    try {
      Checkpoint::open(path);
      ADD_FAILURE() << path << " opened";
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  for (std::size_t len : {std::size_t{3}, std::size_t{100}, bytes.size() / 2, bytes.size() - 1}) {
    const std::string cut = tmp / ("cut" + std::to_string(len) + ".gguf");
    std::ofstream(cut, std::ios::binary) << bytes.substr(0, len);
    expect_format_error(cut, "");
  }
  std::string garbage = bytes;
  garbage[0] = 'X';
  std::ofstream(tmp / "magic.gguf", std::ios::binary) << garbage;
  expect_format_error(tmp / "magic.gguf", "");
  // An "<arch>." key ferry does not know is refused by name, as an unknown config.json key is.
  rewrite_gguf(gguf, tmp / "key.gguf", {{"llama.attention.sliding_window", 64}});
  expect_format_error(tmp / "key.gguf", "llama.attention.sliding_window");
  rewrite_gguf(gguf, tmp / "same.gguf", {});  // the copy itself opens
  EXPECT_EQ(config_to_json(Checkpoint::open(tmp / "same.gguf")->config()), config_to_json(Checkpoint::open(dir)->config()));
  // A value the family's architecture fixes differently.
  rewrite_gguf(gguf, tmp / "rope.gguf", {{"llama.rope.dimension_count", 4}});
  expect_format_error(tmp / "rope.gguf", "llama.rope.dimension_count");
}

TEST(GgufModel, ExpertTypesTheKernelsDoNotComputeAreRefusedByName) {
  TempDir tmp;
  const std::string dir = make_model(tmp, loadable_config("mixtral"), "m");
  // Q4_K_M of rows of 32/64: the K-quants fall back to Q5_0, which ferry stores but does not compute.
  const std::string gguf = export_model(dir, tmp / "m.gguf", LlamaFileType::kMostlyQ4_K_M, false);
  auto g = Checkpoint::open(gguf);
  try {
    HostPool::load(*g);
    ADD_FAILURE() << "Q5_0 experts loaded as stored";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("blk.0.ffn_gate_exps.weight' is stored in Q5_0"), std::string::npos) << e.what();
  }
  EXPECT_EQ(HostPool::load(*g, true, QuantType::kQ8_0)->layout().format, QuantType::kQ8_0);  // --weights converts
}

TEST(GgufModel, BpeTokenizerFromTheFile) {
  TempDir tmp;
  MoeConfig c = loadable_config("qwen2_moe");
  c.vocab_size = 262;
  c.tokenizer = "";
  const std::string dir = make_model(tmp, c, "q");
  testing::write_small_bpe_tokenizer(dir, {testing::added_token(258, "<|endoftext|>", true),
                                            testing::added_token(259, "<tool>", false)});
  const std::string gguf = export_model(dir, tmp / "t.gguf", LlamaFileType::kAllF32, false);
  auto from_dir = load_tokenizer(dir, "", 262);
  auto from_file = load_tokenizer(gguf, "", 262);
  for (const std::string text : {"the hat", "he tt <|endoftext|> <tool>x", "t\xC3\xA9 he\n\nthe"}) {
    const auto ids = from_file->encode(text);
    EXPECT_EQ(ids, from_dir->encode(text)) << text;
    EXPECT_EQ(from_file->decode(ids), text);
  }
  EXPECT_EQ(from_file->encode("he t"), (std::vector<std::int32_t>{257, 256}));
  // A tokenizer model ferry does not build is refused by name.
  const GgufFile f = GgufFile::open(gguf);
  quant::GgufWriter w(f.alignment());
  for (const auto& [key, value] : f.metadata())
    if (key == "tokenizer.ggml.model")
      w.add_string(key, "ugm");
    else if (key != "general.alignment")
      w.add(key, value);
  for (const auto& t : f.tensors()) {
    const auto bytes = f.data(t);
    w.add_tensor(t.name, t.dims, t.type, std::vector<std::byte>(bytes.begin(), bytes.end()));
  }
  w.write(tmp / "ugm.gguf");
  try {
    load_tokenizer(tmp / "ugm.gguf", "", 262);
    ADD_FAILURE() << "a ugm tokenizer was built";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer.ggml.model 'ugm'"), std::string::npos) << e.what();
  }
}

// Kimi-K2 (DeepSeek-V3's layers under model_type kimi_k2): its GGUF file names its tokenizer's
// pre-tokenizer kimi-k2, as the converter does, and that name reads the file back as kimi_k2 (served
// with its own chat template); the family's own checkpoint keeps deepseek-v3.
TEST(GgufModel, AnAliasIsKnownByItsTokenizer) {
  TempDir tmp;
  for (const std::string alias : {"kimi_k2", ""}) {
    MoeConfig c = loadable_config("deepseek_v3");
    c.model_alias = alias;
    c.vocab_size = 262;
    c.tokenizer = "";
    const std::string dir = make_model(tmp, c, "k" + alias);
    testing::write_small_bpe_tokenizer(dir, nlohmann::json::array({testing::added_token(258, "<|im_end|>", true)}));
    const std::string gguf = export_model(dir, tmp / ("k" + alias + ".gguf"), LlamaFileType::kAllF32, false);
    EXPECT_EQ(GgufFile::open(gguf).get_string("tokenizer.ggml.pre"), alias.empty() ? "deepseek-v3" : "kimi-k2");
    const MoeConfig back = load_config(gguf);
    EXPECT_EQ(back.model_type, "deepseek_v3");
    EXPECT_EQ(back.model_alias, alias);
    EXPECT_EQ(default_chat_template(back.declared_model_type()), alias.empty() ? "deepseek3" : "kimi-k2");
    EXPECT_NO_THROW(load_tokenizer(gguf, "", 262));  // a pre-tokenizer ferry builds
  }
}

// A SentencePiece tokenizer.model (trained here by SentencePiece itself, BPE with byte fallback and
// whitespace-only pieces, as Llama's and Mixtral's) converted into a GGUF file: the tokenizer built
// from the file's pieces, scores and types encodes and decodes as SentencePiece does.
TEST(GgufModel, SentencePieceTokenizerFromTheFile) {
#ifndef FERRY_SPM_TRAIN_TOOL
  GTEST_SKIP() << "SentencePiece's trainer (libsentencepiece_train) is not available";
#else
  TempDir tmp;
  {
    std::ofstream corpus(tmp / "corpus.txt");
    const char* lines[] = {"the quick brown fox jumps over the lazy dog", "experts live in host memory and cross PCIe",
                           "a mixture of experts routes every token to two of eight experts",
                           "    indented  text with   runs of spaces", "numbers 12345 and 2026-12-04",
                           "the the the there then these those"};
    for (int r = 0; r < 40; ++r)
      for (const char* l : lines) corpus << l << " " << r << "\n";
  }
  const std::string dir = tmp / "spm";
  const std::string prefix = tmp / "sp";
  const std::string cmd = std::string(FERRY_SPM_TRAIN_TOOL) + " --input=" + (tmp / "corpus.txt") +
                          " --model_prefix=" + prefix +
                          " --vocab_size=400 --model_type=bpe --byte_fallback=true --character_coverage=1.0"
                          " --normalization_rule_name=identity --remove_extra_whitespaces=false"
                          " --allow_whitespace_only_pieces=true --split_digits=true --num_threads=1"
                          " --minloglevel=2 --hard_vocab_limit=false";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  auto from_model = make_sentencepiece_tokenizer(prefix + ".model");
  MoeConfig c = loadable_config("mixtral");
  c.vocab_size = from_model->vocab_size();
  c.tokenizer = "";
  make_model(tmp, c, "spm");
  std::filesystem::copy_file(prefix + ".model", std::filesystem::path(dir) / "tokenizer.model");
  const std::string gguf = export_model(dir, tmp / "spm.gguf", LlamaFileType::kAllF32, false);
  auto from_file = load_tokenizer(gguf, "", c.vocab_size);
  EXPECT_EQ(from_file->name(), "sentencepiece");
  EXPECT_EQ(from_file->bos_id(), from_model->bos_id());
  for (const std::string text :
       {"the quick brown fox", "experts   cross PCIe twice", "  leading and trailing  ", "digits 9876543210",
        "unseen: \xC3\xA9t\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 \xE4\xB8\xAD", "tabs\tand\nnew lines\n\n", "x",
        "themthethere"}) {
    const auto ids = from_file->encode(text);
    EXPECT_EQ(ids, from_model->encode(text)) << text;
    EXPECT_EQ(from_file->decode(ids), from_model->decode(ids)) << text;
    EXPECT_EQ(from_file->decode(ids), text) << text;
  }
#endif
}

}  // namespace
}  // namespace ferry::moe
