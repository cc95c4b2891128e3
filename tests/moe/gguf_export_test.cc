// `ferry moe quantize` (moe/model/gguf_export.h): for each family, a tiny checkpoint written as
// GGUF and read back with GgufFile: every metadata key and value, every tensor's name, shape and
// type against tables written here by hand from llama.cpp's converter (not from gguf_layout.cc),
// the data equal to the checkpoint's (q/k through the inverse permutation), Q8_0/Q4_0/K-quant
// tensors equal to the reference quantizers' bytes, and the Q4_K_M mix of llama-quantize.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "moe/model/checkpoint.h"
#include "moe/model/family.h"
#include "moe/model/gguf_export.h"
#include "moe/model/gguf_layout.h"
#include "moe/quant/dequantize.h"
#include "moe/quant/gguf_file.h"
#include "moe/quant/quantize.h"
#include "moe/tokenizer/byte_level.h"
#include "bpe_test_util.h"
#include "moe_test_util.h"

namespace ferry::moe {
namespace {

using quant::GgufFile;
using quant::LlamaFileType;
using quant::QuantType;
using testing::TempDir;

// The tiny model of each family: 3 layers, hidden 32 (4 heads of 8, 2 key/value heads), 8 experts
// of width `expert`, byte vocabulary; Qwen2-MoE with a gated shared expert of 32, DeepSeek with a
// dense first layer and two shared experts, as llama.cpp's architectures need.
MoeConfig family_config(const std::string& family, int expert = 48) {
  MoeConfig c = testing::tiny_config();
  c.model_type = family;
  c.intermediate_size = expert;
  if (family == "qwen2_moe") {
    c.shared_expert_intermediate_size = 32;
    c.shared_expert_gate = true;
  }
  if (family == "olmoe") c.num_kv_heads = c.num_heads;  // llama.cpp's olmoe: k_norm spans hidden_size
  if (family == "deepseek") {
    c.dense_layers = {0};
    c.shared_expert_intermediate_size = 2 * expert;
  }
  prepare_tiny_config(c);
  return c;
}

std::string make_model(const TempDir& tmp, const MoeConfig& c, const std::string& name) {
  const std::string dir = tmp / name;
  TinyModelOptions o;
  o.config = c;
  o.seed = 7;
  make_tiny_model(dir, o);
  return dir;
}

// One expected GGUF tensor: its dims and the HF tensors it holds (several: stacked experts).
struct Expected {
  std::vector<std::uint64_t> dims;
  std::vector<std::string> hf;
  int permute_heads = 0;
};

// Written out from convert_hf_to_gguf.py's tensor map for these HF names.
std::map<std::string, Expected> expected_tensors(const MoeConfig& c) {
  const std::string f = c.model_type;
  const std::uint64_t H = c.hidden_size, V = c.vocab_size, I = c.intermediate_size, E = c.num_experts,
                      D = c.head_dim, Q = c.num_heads * D, KV = c.num_kv_heads * D;
  const bool permute = f == "mixtral" || f == "deepseek";
  std::map<std::string, Expected> t;
  t["token_embd.weight"] = {{H, V}, {"model.embed_tokens.weight"}};
  t["output_norm.weight"] = {{H}, {"model.norm.weight"}};
  t["output.weight"] = {{H, V}, {"lm_head.weight"}};
  const std::string moe = f == "mixtral" ? "block_sparse_moe." : "mlp.";
  const std::string w1 = f == "mixtral" ? "w1" : "gate_proj", w2 = f == "mixtral" ? "w2" : "down_proj",
                    w3 = f == "mixtral" ? "w3" : "up_proj";
  for (int l = 0; l < c.num_layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".", m = "model.layers." + std::to_string(l) + ".";
    t[b + "attn_norm.weight"] = {{H}, {m + "input_layernorm.weight"}};
    t[b + "ffn_norm.weight"] = {{H}, {m + "post_attention_layernorm.weight"}};
    t[b + "attn_q.weight"] = {{H, Q}, {m + "self_attn.q_proj.weight"}, permute ? c.num_heads : 0};
    t[b + "attn_k.weight"] = {{H, KV}, {m + "self_attn.k_proj.weight"}, permute ? c.num_kv_heads : 0};
    t[b + "attn_v.weight"] = {{H, KV}, {m + "self_attn.v_proj.weight"}};
    t[b + "attn_output.weight"] = {{Q, H}, {m + "self_attn.o_proj.weight"}};
    if (f == "qwen2_moe") {
      t[b + "attn_q.bias"] = {{Q}, {m + "self_attn.q_proj.bias"}};
      t[b + "attn_k.bias"] = {{KV}, {m + "self_attn.k_proj.bias"}};
      t[b + "attn_v.bias"] = {{KV}, {m + "self_attn.v_proj.bias"}};
    }
    if (f == "qwen3_moe") {  // RMSNorm of each head
      t[b + "attn_q_norm.weight"] = {{D}, {m + "self_attn.q_norm.weight"}};
      t[b + "attn_k_norm.weight"] = {{D}, {m + "self_attn.k_norm.weight"}};
    }
    if (f == "olmoe") {  // RMSNorm of the whole projection
      t[b + "attn_q_norm.weight"] = {{Q}, {m + "self_attn.q_norm.weight"}};
      t[b + "attn_k_norm.weight"] = {{KV}, {m + "self_attn.k_norm.weight"}};
    }
    if (f == "deepseek" && l == 0) {
      const std::uint64_t F = 2 * I;
      t[b + "ffn_gate.weight"] = {{H, F}, {m + "mlp.gate_proj.weight"}};
      t[b + "ffn_up.weight"] = {{H, F}, {m + "mlp.up_proj.weight"}};
      t[b + "ffn_down.weight"] = {{F, H}, {m + "mlp.down_proj.weight"}};
      continue;
    }
    t[b + "ffn_gate_inp.weight"] = {{H, E}, {m + moe + "gate.weight"}};
    auto experts = [&](const std::string& w) {
      std::vector<std::string> names;
      for (int e = 0; e < c.num_experts; ++e) names.push_back(m + moe + "experts." + std::to_string(e) + "." + w + ".weight");
      return names;
    };
    t[b + "ffn_gate_exps.weight"] = {{H, I, E}, experts(w1)};
    t[b + "ffn_up_exps.weight"] = {{H, I, E}, experts(w3)};
    t[b + "ffn_down_exps.weight"] = {{I, H, E}, experts(w2)};
    if (f == "qwen2_moe" || f == "deepseek") {
      const std::string s = f == "qwen2_moe" ? "mlp.shared_expert." : "mlp.shared_experts.";
      const std::uint64_t S = c.shared_expert_intermediate_size;
      t[b + "ffn_gate_shexp.weight"] = {{H, S}, {m + s + "gate_proj.weight"}};
      t[b + "ffn_up_shexp.weight"] = {{H, S}, {m + s + "up_proj.weight"}};
      t[b + "ffn_down_shexp.weight"] = {{S, H}, {m + s + "down_proj.weight"}};
    }
    if (f == "qwen2_moe") t[b + "ffn_gate_inp_shexp.weight"] = {{H, 1}, {m + "mlp.shared_expert_gate.weight"}};
  }
  return t;
}

// The metadata the converter writes for these configs (Model.set_gguf_parameters and the family's
// class), then llama-quantize's two keys; every value as a double or a string.
std::map<std::string, std::string> expected_metadata(const MoeConfig& c, const std::string& name, int file_type) {
  const std::string f = c.model_type;
  const std::string a = f == "mixtral"   ? "llama"
                        : f == "qwen2_moe" ? "qwen2moe"
                        : f == "qwen3_moe" ? "qwen3moe"
                                           : f;
  auto num = [](double v) { return std::to_string(v); };
  auto f32 = [&](double v) { return num(static_cast<float>(v)); };
  std::map<std::string, std::string> m = {
      {"general.architecture", a},
      {"general.type", "model"},
      {"general.name", name},
      {a + ".block_count", num(3)},
      {a + ".context_length", num(128)},
      {a + ".embedding_length", num(32)},
      {a + ".feed_forward_length", num(f == "deepseek" ? 2 * c.intermediate_size : c.intermediate_size)},
      {a + ".attention.head_count", num(4)},
      {a + ".attention.head_count_kv", num(c.num_kv_heads)},
      {a + ".rope.freq_base", f32(c.rope_theta)},
      {a + ".attention.layer_norm_rms_epsilon", f32(f == "olmoe" ? 1e-5 : c.rms_norm_eps)},
      {a + ".expert_count", num(8)},
      {a + ".expert_used_count", num(2)},
      {"tokenizer.ggml.model", "gpt2"},
      {"tokenizer.ggml.pre", "default"},
      {"tokenizer.ggml.tokens", "256 strings"},
      {"tokenizer.ggml.token_type", "256 numbers"},
      {"tokenizer.ggml.merges", "0 strings"},
      {"tokenizer.ggml.add_bos_token", "false"},
      {"general.quantization_version", num(2)},
      {"general.file_type", num(file_type)},
  };
  if (f != "deepseek") {  // DeepSeek V1's config.json has no head_dim
    m[a + ".attention.key_length"] = num(8);
    m[a + ".attention.value_length"] = num(8);
  }
  if (f == "mixtral") {
    m[a + ".vocab_size"] = num(256);
    m[a + ".rope.dimension_count"] = num(8);
  }
  if (f == "qwen2_moe" || f == "qwen3_moe") m[a + ".expert_feed_forward_length"] = num(c.intermediate_size);
  if (f == "qwen2_moe") m[a + ".expert_shared_feed_forward_length"] = num(32);
  if (f == "deepseek") {
    m[a + ".rope.dimension_count"] = num(8);
    m[a + ".rope.scaling.type"] = "none";
    m[a + ".leading_dense_block_count"] = num(1);
    m[a + ".vocab_size"] = num(256);
    m[a + ".expert_feed_forward_length"] = num(c.intermediate_size);
    m[a + ".expert_weights_scale"] = num(1);
    m[a + ".expert_shared_count"] = num(2);
  }
  return m;
}

std::string rendered(const quant::GgufValue& v) {
  if (v.type == quant::GgufType::kString) return v.s;
  if (v.type == quant::GgufType::kBool) return v.b ? "true" : "false";
  if (v.type == quant::GgufType::kArray)
    return std::to_string(v.array_size()) + (v.element_type == quant::GgufType::kString ? " strings" : " numbers");
  return std::to_string(v.is_integer() ? static_cast<double>(v.i) : v.f);
}

// The HF values of a GGUF tensor, stacked and permuted as the converter does, computed here
// independently of gguf_layout.cc: q/k rows (h, s, i) to (h, i, s).
std::vector<float> hf_values(const Checkpoint& ckpt, const Expected& e) {
  std::vector<float> out;
  for (const std::string& name : e.hf) {
    const TensorRef r = ckpt.at(name);
    std::vector<float> v(static_cast<std::size_t>(r.info->numel()));
    ckpt.read_f32(name, r.info->shape, v.data());
    if (e.permute_heads > 0) {
      const std::int64_t rows = r.info->shape[0], cols = r.info->shape.size() > 1 ? r.info->shape[1] : 1;
      const std::int64_t half = rows / e.permute_heads / 2;
      std::vector<float> p(v.size());
      for (std::int64_t h = 0; h < e.permute_heads; ++h)
        for (std::int64_t i = 0; i < half; ++i)
          for (std::int64_t s = 0; s < 2; ++s)
            for (std::int64_t col = 0; col < cols; ++col)
              p[((h * half + i) * 2 + s) * cols + col] = v[((h * 2 + s) * half + i) * cols + col];
      v = p;
    }
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

class GgufExportFamily : public ::testing::TestWithParam<std::string> {};

TEST_P(GgufExportFamily, F32FileHoldsTheCheckpointAsTheConverterWritesIt) {
  TempDir tmp;
  const std::string dir = make_model(tmp, family_config(GetParam()), "tiny-" + GetParam());
  const auto ckpt = Checkpoint::open(dir);
  const MoeConfig& c = ckpt->config();
  GgufExportOptions o;
  o.threads = 3;
  const auto report = export_gguf(dir, tmp / "m.gguf", o);
  const GgufFile f = GgufFile::open(tmp / "m.gguf");
  EXPECT_EQ(f.version(), 3u);

  const auto want_keys = expected_metadata(c, "tiny-" + GetParam(), 0);
  std::map<std::string, std::string> got_keys;
  for (const auto& [key, value] : f.metadata()) got_keys[key] = rendered(value);
  EXPECT_EQ(got_keys, want_keys);
  EXPECT_EQ(f.get("general.file_type").type, quant::GgufType::kU32);
  EXPECT_EQ(f.get(std::string(f.get_string("general.architecture")) + ".rope.freq_base").type, quant::GgufType::kF32);
  const auto& tokens = f.get("tokenizer.ggml.tokens").strings;
  for (int b = 0; b < 256; ++b) {
    const char byte = static_cast<char>(b);
    ASSERT_EQ(tokens[b], byte_level_encode(std::string_view(&byte, 1))) << b;
  }
  EXPECT_EQ(tokens['A'], "A");
  EXPECT_EQ(tokens[' '], "\xC4\xA0");  // Ġ
  for (double t : f.get("tokenizer.ggml.token_type").numbers) ASSERT_EQ(t, 1.0);

  const auto want = expected_tensors(c);
  std::set<std::string> got_names;
  for (const auto& t : f.tensors()) got_names.insert(t.name);
  std::set<std::string> want_names;
  for (const auto& [name, e] : want) want_names.insert(name);
  EXPECT_EQ(got_names, want_names);
  for (const auto& [name, e] : want) {
    const quant::GgufTensor* t = f.find_tensor(name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_EQ(t->dims, e.dims) << name;
    EXPECT_EQ(t->type, QuantType::kF32) << name;
    const auto expected = hf_values(*ckpt, e);
    const auto bytes = f.data(*t);
    ASSERT_EQ(bytes.size(), expected.size() * 4) << name;
    EXPECT_EQ(std::memcmp(bytes.data(), expected.data(), bytes.size()), 0) << name;
    if (e.permute_heads > 0) {  // and the inverse permutation gives the HF rows back exactly
      std::vector<float> stored(expected.size()), back(expected.size());
      std::memcpy(stored.data(), bytes.data(), bytes.size());
      gguf_unpermute_rows(stored, back, static_cast<std::int64_t>(e.dims[1]), static_cast<std::int64_t>(e.dims[0]),
                          e.permute_heads);
      std::vector<float> hf(expected.size());
      ckpt->read_f32(e.hf[0], {static_cast<std::int64_t>(e.dims[1]), static_cast<std::int64_t>(e.dims[0])}, hf.data());
      EXPECT_EQ(back, hf) << name;
    }
  }
  // llama-quantize's order: the head tensors first, then each layer's by name.
  ASSERT_EQ(report.tensors.size(), f.tensors().size());
  std::vector<std::string> order;
  for (const auto& t : f.tensors()) order.push_back(t.name);
  EXPECT_EQ(order.front(), "output.weight");
  EXPECT_EQ(order[2], "token_embd.weight");
  EXPECT_EQ(order[3].rfind("blk.0.attn_k.", 0), 0u) << order[3];
  EXPECT_EQ(report.file_bytes, std::filesystem::file_size(tmp / "m.gguf"));
}

INSTANTIATE_TEST_SUITE_P(Families, GgufExportFamily,
                         ::testing::Values("mixtral", "qwen2_moe", "qwen3_moe", "olmoe", "deepseek"),
                         [](const auto& info) { return info.param; });

// LlamaModel.permute by hand: 8 rows of 2 heads, each head two halves of 2 rows; GGUF row r holds
// HF row [0, 2, 1, 3, 4, 6, 5, 7][r] (the halves interleaved within each head).
TEST(GgufLayout, PermutationOfQAndKRowsByHand) {
  std::vector<float> hf(8 * 3), gguf(8 * 3), back(8 * 3);
  for (int r = 0; r < 8; ++r)
    for (int col = 0; col < 3; ++col) hf[r * 3 + col] = static_cast<float>(10 * r + col);
  gguf_permute_rows(hf, gguf, 8, 3, 2);
  const int from[8] = {0, 2, 1, 3, 4, 6, 5, 7};
  for (int r = 0; r < 8; ++r)
    for (int col = 0; col < 3; ++col) EXPECT_EQ(gguf[r * 3 + col], 10 * from[r] + col) << r;
  gguf_unpermute_rows(gguf, back, 8, 3, 2);
  EXPECT_EQ(back, hf);
  EXPECT_THROW(gguf_permute_rows(hf, gguf, 8, 3, 3), InvalidArgument);  // 8 rows are not 3 heads of two halves
}

// Q8_0 and Q4_0 files: llama-quantize's types for 8 experts (attn_k/attn_v Q8_0; the output Q6_K,
// which rows of 32 cannot hold, so Q8_0; norms and the router F32), and each tensor's bytes those
// of the reference quantizer on the checkpoint's (permuted) values.
TEST(GgufExport, Q8_0AndQ4_0TensorsAreTheReferenceQuantizersBytes) {
  TempDir tmp;
  const std::string dir = make_model(tmp, family_config("mixtral", 64), "m");
  const auto ckpt = Checkpoint::open(dir);
  const auto want = expected_tensors(ckpt->config());
  for (auto [file_type, base] : {std::pair{LlamaFileType::kMostlyQ8_0, QuantType::kQ8_0},
                                 std::pair{LlamaFileType::kMostlyQ4_0, QuantType::kQ4_0}}) {
    GgufExportOptions o;
    o.file_type = file_type;
    export_gguf(dir, tmp / "q.gguf", o);
    const GgufFile f = GgufFile::open(tmp / "q.gguf");
    EXPECT_EQ(f.get_int("general.file_type"), static_cast<int>(file_type));
    for (const auto& t : f.tensors()) {
      const bool stays = t.name.find("norm") != std::string::npos || t.name.find("gate_inp") != std::string::npos;
      const bool q8 = t.name.find("attn_k.") != std::string::npos || t.name.find("attn_v.") != std::string::npos ||
                      t.name == "output.weight";
      const QuantType expect = stays ? QuantType::kF32 : q8 ? QuantType::kQ8_0 : base;
      EXPECT_EQ(t.type, expect) << t.name;
      const auto values = hf_values(*ckpt, want.at(t.name));
      std::vector<std::byte> bytes(quant::quant_row_bytes(t.type, t.dims[0]) * (values.size() / t.dims[0]));
      for (std::size_t r = 0; r < values.size() / t.dims[0]; ++r)
        quant::quantize_row(t.type, values.data() + r * t.dims[0], bytes.data() + r * quant::quant_row_bytes(t.type, t.dims[0]),
                            t.dims[0]);
      const auto got = f.data(t);
      ASSERT_EQ(got.size(), bytes.size()) << t.name;
      EXPECT_EQ(std::memcmp(got.data(), bytes.data(), bytes.size()), 0) << t.name;
    }
  }
}

// Q4_K_M of a Mixtral-shaped model of 4 layers, rows of 256: llama_tensor_get_type gives
//   attn_q, ffn_gate_exps, ffn_up_exps, token_embd   Q4_K
//   attn_k, attn_v                                   Q8_0 (8 experts)
//   attn_output                                      Q5_K (8 experts, Q4_K_M)
//   ffn_down_exps                                    Q6_K in layers 2 and 3, Q4_K in 0 and 1
//                                                    (use_more_bits(i, 4): i >= 3 or i % 3 == 2)
//   output                                           Q6_K
//   norms, ffn_gate_inp                              F32
// and every tensor's bytes are the reference quantizer's.
TEST(GgufExport, Q4_K_MFollowsLlamaQuantizesRule) {
  TempDir tmp;
  MoeConfig c = testing::block_config(4, testing::tiny_config().num_experts);
  prepare_tiny_config(c);
  const std::string dir = make_model(tmp, c, "m");
  const auto ckpt = Checkpoint::open(dir);
  GgufExportOptions o;
  o.file_type = LlamaFileType::kMostlyQ4_K_M;
  export_gguf(dir, tmp / "q.gguf", o);
  const GgufFile f = GgufFile::open(tmp / "q.gguf");
  EXPECT_EQ(f.get_int("general.file_type"), 15);
  std::map<std::string, std::string> types;
  for (const auto& t : f.tensors()) types[t.name] = quant::quant_name(t.type);
  EXPECT_EQ(types.at("token_embd.weight"), "Q4_K");
  EXPECT_EQ(types.at("output.weight"), "Q6_K");
  EXPECT_EQ(types.at("output_norm.weight"), "F32");
  for (int l = 0; l < 4; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    EXPECT_EQ(types.at(b + "attn_q.weight"), "Q4_K");
    EXPECT_EQ(types.at(b + "attn_k.weight"), "Q8_0");
    EXPECT_EQ(types.at(b + "attn_v.weight"), "Q8_0");
    EXPECT_EQ(types.at(b + "attn_output.weight"), "Q5_K");
    EXPECT_EQ(types.at(b + "ffn_gate_exps.weight"), "Q4_K");
    EXPECT_EQ(types.at(b + "ffn_up_exps.weight"), "Q4_K");
    EXPECT_EQ(types.at(b + "ffn_down_exps.weight"), l >= 2 ? "Q6_K" : "Q4_K") << l;
    EXPECT_EQ(types.at(b + "ffn_gate_inp.weight"), "F32");
    EXPECT_EQ(types.at(b + "attn_norm.weight"), "F32");
  }
  // Bytes: the reference quantizer on the checkpoint's values (q/k permuted as the converter does).
  const auto want = expected_tensors(ckpt->config());
  for (const auto& t : f.tensors()) {
    const auto values = hf_values(*ckpt, want.at(t.name));
    const std::size_t row_bytes = quant::quant_row_bytes(t.type, t.dims[0]);
    std::vector<std::byte> bytes(row_bytes * (values.size() / t.dims[0]));
    for (std::size_t r = 0; r < values.size() / t.dims[0]; ++r)
      quant::quantize_row(t.type, values.data() + r * t.dims[0], bytes.data() + r * row_bytes, t.dims[0]);
    const auto got = f.data(t);
    ASSERT_EQ(got.size(), bytes.size()) << t.name;
    EXPECT_EQ(std::memcmp(got.data(), bytes.data(), bytes.size()), 0) << t.name;
  }
  // The experts of layer 3 in Q6_K: expert 5's down projection is its own rows quantized.
  const quant::GgufTensor* down = f.find_tensor("blk.3.ffn_down_exps.weight");
  ASSERT_NE(down, nullptr);
  std::vector<float> w2(256 * 256);
  ckpt->read_f32("model.layers.3.block_sparse_moe.experts.5.w2.weight", {256, 256}, w2.data());
  std::vector<std::byte> q(quant::quant_row_bytes(QuantType::kQ6_K, 256) * 256);
  for (int r = 0; r < 256; ++r)
    quant::quantize_row(QuantType::kQ6_K, w2.data() + r * 256, q.data() + r * quant::quant_row_bytes(QuantType::kQ6_K, 256), 256);
  EXPECT_EQ(std::memcmp(f.data(*down).data() + 5 * q.size(), q.data(), q.size()), 0);
}

// A tokenizer.json vocabulary: model gpt2 with the family's pre-tokenizer name, the merges, added
// tokens typed as the converter types them, ids beyond the tokenizer padded "[PAD<id>]", and the
// special tokens of tokenizer_config.json (looked up among the added tokens) and config.json.
TEST(GgufExport, TokenizerJsonVocabulary) {
  TempDir tmp;
  MoeConfig c = family_config("qwen2_moe");
  c.vocab_size = 262;
  c.tokenizer = "";
  const std::string dir = make_model(tmp, c, "q");
  testing::write_small_bpe_tokenizer(dir, {testing::added_token(258, "<|endoftext|>", true),
                                            testing::added_token(259, "<|im_start|>", false),
                                            testing::added_token(260, "<tool>", false)});
  std::ofstream(dir + "/tokenizer_config.json")
      << nlohmann::json({{"eos_token", "<|endoftext|>"}, {"add_bos_token", false}, {"chat_template", "{{ x }}"}}).dump();
  export_gguf(dir, tmp / "t.gguf", {});
  const GgufFile f = GgufFile::open(tmp / "t.gguf");
  EXPECT_EQ(f.get_string("tokenizer.ggml.model"), "gpt2");
  EXPECT_EQ(f.get_string("tokenizer.ggml.pre"), "qwen2");
  const auto& tokens = f.get("tokenizer.ggml.tokens").strings;
  const auto& types = f.get("tokenizer.ggml.token_type").numbers;
  ASSERT_EQ(tokens.size(), 262u);
  EXPECT_EQ(tokens[256], "\xC4\xA0t");
  EXPECT_EQ(tokens[258], "<|endoftext|>");
  EXPECT_EQ(tokens[261], "[PAD261]");
  EXPECT_EQ(types[256], 1);  // normal
  EXPECT_EQ(types[258], 3);  // control: special
  EXPECT_EQ(types[259], 3);  // control: looks special (<|...|>)
  EXPECT_EQ(types[260], 4);  // user-defined
  EXPECT_EQ(types[261], 5);  // unused
  EXPECT_EQ(f.get("tokenizer.ggml.merges").strings, (std::vector<std::string>{"\xC4\xA0 t", "h e"}));
  EXPECT_EQ(f.get_int("tokenizer.ggml.eos_token_id"), 258);
  EXPECT_FALSE(f.get("tokenizer.ggml.add_bos_token").b);
  EXPECT_EQ(f.get_string("tokenizer.chat_template"), "{{ x }}");
  EXPECT_EQ(f.find("tokenizer.ggml.bos_token_id"), nullptr);
}

// What llama.cpp's architecture cannot hold is refused before anything is written.
TEST(GgufExport, RefusesWhatTheArchitectureCannotHold) {
  TempDir tmp;
  MoeConfig c = family_config("qwen2_moe");
  c.shared_expert_gate = false;
  const std::string ungated = make_model(tmp, c, "ungated");
  EXPECT_THROW(export_gguf(ungated, tmp / "x.gguf", {}), InvalidArgument);
  MoeConfig d = family_config("qwen3_moe");
  d.dense_layers = {1};
  prepare_tiny_config(d);
  EXPECT_THROW(export_gguf(make_model(tmp, d, "dense"), tmp / "x.gguf", {}), InvalidArgument);
  MoeConfig g = family_config("olmoe");
  g.num_kv_heads = 2;  // k_norm over 2 heads: llama.cpp's olmoe expects it over hidden_size
  EXPECT_THROW(export_gguf(make_model(tmp, g, "gqa"), tmp / "x.gguf", {}), InvalidArgument);
  EXPECT_FALSE(std::filesystem::exists(tmp / "x.gguf"));
  // Rows of 48 are not whole Q4_0 blocks (llama-quantize refuses them too).
  GgufExportOptions o;
  o.file_type = LlamaFileType::kMostlyQ4_0;
  EXPECT_THROW(export_gguf(make_model(tmp, family_config("olmoe"), "olmoe"), tmp / "x.gguf", o), InvalidArgument);
  EXPECT_THROW(export_gguf(tmp / "none", tmp / "x.gguf", {}), IoError);
}

}  // namespace
}  // namespace ferry::moe
