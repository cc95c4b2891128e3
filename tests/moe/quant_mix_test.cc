// llama-quantize's choice of a type per tensor (moe/quant/quant_mix.h), against tables written out
// by hand from llama_tensor_get_type (src/llama-quant.cpp) for given layer and expert counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "moe/quant/quant_mix.h"

namespace ferry::moe::quant {
namespace {

// A MoE model's GGUF tensors: hidden H, expert width I, E experts, `layers` layers, vocabulary V;
// `shared` > 0 adds a gated shared expert of that width.
std::vector<MixTensor> moe_tensors(int layers, std::uint64_t H, std::uint64_t I, std::uint64_t E, std::uint64_t V,
                                   std::uint64_t shared = 0) {
  std::vector<MixTensor> t = {{"token_embd.weight", {H, V}}, {"output_norm.weight", {H}}, {"output.weight", {H, V}}};
  for (int l = 0; l < layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    for (const char* n : {"attn_q.weight", "attn_k.weight", "attn_v.weight", "attn_output.weight"})
      t.push_back({b + n, {H, H}});
    t.push_back({b + "attn_norm.weight", {H}});
    t.push_back({b + "ffn_norm.weight", {H}});
    t.push_back({b + "ffn_gate_inp.weight", {H, E}});
    t.push_back({b + "ffn_gate_exps.weight", {H, I, E}});
    t.push_back({b + "ffn_up_exps.weight", {H, I, E}});
    t.push_back({b + "ffn_down_exps.weight", {I, H, E}});
    if (shared) {
      t.push_back({b + "ffn_gate_shexp.weight", {H, shared}});
      t.push_back({b + "ffn_up_shexp.weight", {H, shared}});
      t.push_back({b + "ffn_down_shexp.weight", {shared, H}});
      t.push_back({b + "ffn_gate_inp_shexp.weight", {H, 1}});
    }
  }
  return t;
}

std::map<std::string, std::string> chosen(const std::vector<MixTensor>& t, LlamaFileType type, int layers, int experts,
                                          bool pure = false) {
  const auto types = choose_tensor_types(t, {type, pure, layers, experts});
  std::map<std::string, std::string> out;
  for (std::size_t k = 0; k < t.size(); ++k) out[t[k].name] = quant_name(types[k]);
  return out;
}

// use_more_bits(i, 8) = i < 1 || i >= 7 || (i − 1) % 3 == 2: layers 0, 3, 6, 7.
const std::vector<int> kMoreBits8 = {0, 3, 6, 7};
bool more_bits_8(int l) { return std::find(kMoreBits8.begin(), kMoreBits8.end(), l) != kMoreBits8.end(); }

// Q4_K_M of a Mixtral-shaped model (8 experts, 8 layers, rows of 256 and 512):
//   attn_q, ffn_gate_exps, ffn_up_exps, token_embd   Q4_K (the base)
//   attn_k, attn_v                                   Q8_0 (8 experts)
//   attn_output                                      Q5_K (8 experts)
//   ffn_down_exps                                    Q6_K in layers 0, 3, 6, 7; Q4_K in 1, 2, 4, 5
//   output                                           Q6_K
//   norms, ffn_gate_inp                              F32
TEST(QuantMix, Q4_K_MOfAnEightExpertModel) {
  const auto t = moe_tensors(8, 256, 512, 8, 320);
  const auto got = chosen(t, LlamaFileType::kMostlyQ4_K_M, 8, 8);
  EXPECT_EQ(got.at("token_embd.weight"), "Q4_K");
  EXPECT_EQ(got.at("output.weight"), "Q6_K");
  EXPECT_EQ(got.at("output_norm.weight"), "F32");
  for (int l = 0; l < 8; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    EXPECT_EQ(got.at(b + "attn_q.weight"), "Q4_K") << l;
    EXPECT_EQ(got.at(b + "attn_k.weight"), "Q8_0") << l;
    EXPECT_EQ(got.at(b + "attn_v.weight"), "Q8_0") << l;
    EXPECT_EQ(got.at(b + "attn_output.weight"), "Q5_K") << l;
    EXPECT_EQ(got.at(b + "attn_norm.weight"), "F32") << l;
    EXPECT_EQ(got.at(b + "ffn_norm.weight"), "F32") << l;
    EXPECT_EQ(got.at(b + "ffn_gate_inp.weight"), "F32") << l;
    EXPECT_EQ(got.at(b + "ffn_gate_exps.weight"), "Q4_K") << l;
    EXPECT_EQ(got.at(b + "ffn_up_exps.weight"), "Q4_K") << l;
    EXPECT_EQ(got.at(b + "ffn_down_exps.weight"), more_bits_8(l) ? "Q6_K" : "Q4_K") << l;
  }
}

// With 60 experts (Qwen1.5-MoE's count) the 8-expert cases vanish: attn_v follows use_more_bits
// over the attn_v tensors in file order, attn_k and attn_output keep Q4_K; the shared expert's
// down projection follows ffn_down's rule and its gate (rows [H, 1]: one dimension for ggml)
// stays F32. With 12 layers use_more_bits picks 0, 3, 6, 9, 10, 11 (12/8 = 1, 7·12/8 = 10).
TEST(QuantMix, Q4_K_MWithoutEightExperts) {
  const auto t = moe_tensors(12, 256, 256, 60, 300, 512);
  const auto got = chosen(t, LlamaFileType::kMostlyQ4_K_M, 12, 60);
  const std::vector<int> more = {0, 3, 6, 9, 10, 11};
  for (int l = 0; l < 12; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    const bool m = std::find(more.begin(), more.end(), l) != more.end();
    EXPECT_EQ(got.at(b + "attn_v.weight"), m ? "Q6_K" : "Q4_K") << l;
    EXPECT_EQ(got.at(b + "attn_k.weight"), "Q4_K") << l;
    EXPECT_EQ(got.at(b + "attn_output.weight"), "Q4_K") << l;
    EXPECT_EQ(got.at(b + "ffn_down_exps.weight"), m ? "Q6_K" : "Q4_K") << l;
    EXPECT_EQ(got.at(b + "ffn_down_shexp.weight"), m ? "Q6_K" : "Q4_K") << l;
    EXPECT_EQ(got.at(b + "ffn_gate_shexp.weight"), "Q4_K") << l;
    EXPECT_EQ(got.at(b + "ffn_gate_inp_shexp.weight"), "F32") << l;
  }
  // The attn_v count follows llama-quantize's order (layer, then name), not the caller's.
  auto shuffled = t;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(5));
  EXPECT_EQ(chosen(shuffled, LlamaFileType::kMostlyQ4_K_M, 12, 60), got);
}

// Rows that are not whole blocks fall back: Q4_K -> Q5_0 (rows of 1408, Qwen1.5-MoE's expert
// width), Q6_K -> Q8_0, Q5_K -> Q5_1 (attn_output of 8 experts, rows of 128), and to F16 when
// the fallback does not fit either (rows of 100); the output of rows of 32 gets Q8_0 (not whole
// Q6_K blocks).
TEST(QuantMix, RowsThatAreNotWholeBlocksFallBack) {
  auto t = moe_tensors(8, 256, 1408, 60, 300);
  t.push_back({"blk.1.ffn_up_exps.weight_odd", {100, 4}});  // not a *weight name: stays F32
  auto got = chosen(t, LlamaFileType::kMostlyQ4_K_M, 8, 60);
  EXPECT_EQ(got.at("blk.1.ffn_down_exps.weight"), "Q5_0");
  EXPECT_EQ(got.at("blk.0.ffn_down_exps.weight"), "Q8_0");  // Q6_K, rows of 1408
  EXPECT_EQ(got.at("blk.1.ffn_up_exps.weight"), "Q4_K");    // rows of 256
  EXPECT_EQ(got.at("blk.1.ffn_up_exps.weight_odd"), "F32");
  const std::vector<MixTensor> odd = {{"blk.0.ffn_up_exps.weight", {100, 8, 4}}, {"output.weight", {32, 300}}};
  got = chosen(odd, LlamaFileType::kMostlyQ4_K_M, 1, 4);
  EXPECT_EQ(got.at("blk.0.ffn_up_exps.weight"), "F16");
  EXPECT_EQ(got.at("output.weight"), "Q8_0");
  const std::vector<MixTensor> narrow = {{"blk.0.attn_output.weight", {128, 128}}, {"blk.1.attn_output.weight", {100, 128}}};
  got = chosen(narrow, LlamaFileType::kMostlyQ4_K_M, 2, 8);
  EXPECT_EQ(got.at("blk.0.attn_output.weight"), "Q5_1");
  EXPECT_EQ(got.at("blk.1.attn_output.weight"), "F16");
}

// Q4_0 and Q8_0 take the 8-expert and output rules but not Q4_K_M's: Q4_0's output is Q6_K.
TEST(QuantMix, Q4_0AndQ8_0) {
  const auto t = moe_tensors(8, 256, 512, 8, 320);
  auto got = chosen(t, LlamaFileType::kMostlyQ4_0, 8, 8);
  EXPECT_EQ(got.at("output.weight"), "Q6_K");
  EXPECT_EQ(got.at("token_embd.weight"), "Q4_0");
  EXPECT_EQ(got.at("blk.3.attn_v.weight"), "Q8_0");
  EXPECT_EQ(got.at("blk.3.attn_k.weight"), "Q8_0");
  EXPECT_EQ(got.at("blk.3.attn_output.weight"), "Q4_0");
  EXPECT_EQ(got.at("blk.3.ffn_down_exps.weight"), "Q4_0");
  got = chosen(t, LlamaFileType::kMostlyQ8_0, 8, 8);
  for (const auto& [name, type] : got)
    EXPECT_EQ(type, name.find("norm") != std::string::npos || name.find("gate_inp") != std::string::npos ? "F32" : "Q8_0")
        << name;
  // Rows of 48 are not whole Q4_0 blocks, and Q4_0 has no fallback: llama-quantize refuses.
  EXPECT_THROW(choose_tensor_types({{"blk.0.ffn_down_exps.weight", {48, 32, 8}}}, {LlamaFileType::kMostlyQ4_0, false, 1, 8}),
               InvalidArgument);
}

// Float types and --pure: every quantized tensor in the base type, the rest F32.
TEST(QuantMix, FloatTypesAndPure) {
  const auto t = moe_tensors(4, 256, 512, 8, 320);
  for (auto [type, name] : {std::pair{LlamaFileType::kMostlyF16, "F16"}, std::pair{LlamaFileType::kMostlyBF16, "BF16"},
                            std::pair{LlamaFileType::kAllF32, "F32"}, std::pair{LlamaFileType::kMostlyQ4_K_M, "Q4_K"}}) {
    const auto got = chosen(t, type, 4, 8, /*pure=*/type == LlamaFileType::kMostlyQ4_K_M);
    for (const auto& [tensor, chosen_type] : got) {
      const bool stays = tensor.find("norm") != std::string::npos || tensor.find("gate_inp") != std::string::npos;
      EXPECT_EQ(chosen_type, stays ? "F32" : name) << tensor;
    }
  }
}

// MXFP4_MOE: the 3-D tensors of several matrices (routed experts) MXFP4; output, token_embd,
// attention and the shared expert Q8_0, whatever the expert count; norms and routers F32. A 3-D
// tensor of one matrix is no expert tensor. --pure: every quantized tensor MXFP4.
TEST(QuantMix, Mxfp4Moe) {
  auto t = moe_tensors(4, 256, 512, 8, 320, /*shared=*/256);
  t.push_back({"blk.0.one_matrix.weight", {256, 64, 1}});
  for (int experts : {8, 4}) {
    const auto got = chosen(t, LlamaFileType::kMostlyMXFP4_MOE, 4, experts);
    for (const auto& [tensor, type] : got) {
      const bool stays = tensor.find("norm") != std::string::npos || tensor.find("gate_inp") != std::string::npos;
      const bool expert = tensor.find("_exps.") != std::string::npos;
      EXPECT_EQ(type, stays ? "F32" : expert ? "MXFP4" : "Q8_0") << tensor;
    }
  }
  const auto pure = chosen(t, LlamaFileType::kMostlyMXFP4_MOE, 4, 8, /*pure=*/true);
  EXPECT_EQ(pure.at("output.weight"), "MXFP4");
  EXPECT_EQ(pure.at("blk.2.attn_v.weight"), "MXFP4");
  EXPECT_EQ(pure.at("blk.2.ffn_norm.weight"), "F32");
  // Rows of 48 are not whole MXFP4 blocks: refused, as for Q4_0.
  EXPECT_THROW(choose_tensor_types({{"blk.0.ffn_down_exps.weight", {48, 32, 8}}},
                                   {LlamaFileType::kMostlyMXFP4_MOE, false, 1, 8}),
               InvalidArgument);
  EXPECT_EQ(parse_llama_file_type("mxfp4_moe"), LlamaFileType::kMostlyMXFP4_MOE);
  EXPECT_EQ(parse_llama_file_type("MXFP4"), LlamaFileType::kMostlyMXFP4_MOE);  // ferry's alias
  EXPECT_EQ(static_cast<int>(LlamaFileType::kMostlyMXFP4_MOE), 38);
  EXPECT_EQ(llama_file_type_base(LlamaFileType::kMostlyMXFP4_MOE), QuantType::kMXFP4);
}

TEST(QuantMix, FileTypeNames) {
  EXPECT_EQ(parse_llama_file_type("q4_k"), LlamaFileType::kMostlyQ4_K_M);  // llama-quantize's alias
  EXPECT_EQ(parse_llama_file_type("Q4_K_M"), LlamaFileType::kMostlyQ4_K_M);
  EXPECT_EQ(parse_llama_file_type("bf16"), LlamaFileType::kMostlyBF16);
  EXPECT_FALSE(parse_llama_file_type("Q5_K_M"));
  EXPECT_EQ(static_cast<int>(LlamaFileType::kMostlyQ4_K_M), 15);
  EXPECT_EQ(llama_file_type_base(LlamaFileType::kMostlyQ6_K), QuantType::kQ6_K);
}

}  // namespace
}  // namespace ferry::moe::quant
