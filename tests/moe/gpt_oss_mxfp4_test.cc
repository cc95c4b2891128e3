// gpt-oss's experts in MXFP4 as the released checkpoints store them (*_blocks and *_scales,
// quantization_config mxfp4; moe/model/fused_experts.h): read as MXFP4 blocks without dequantizing
// — byte for byte what ferry's quantizer (ggml's) makes of the same weights, gate at the even rows
// and up at the odd ones, every weight what transformers' dequantization makes of the file's bytes —;
// computed on as a GGUF file with those blocks is (the file `ferry moe quantize --type F32` writes
// from it, as llama.cpp's converter: the same blocks, the same logits bit for bit), within the
// quantization's rounding of the reference forward; exported to MXFP4_MOE as from the float
// checkpoint of the same weights, byte for byte; refused by name where they cannot go.
#include <gtest/gtest.h>

#include <cmath>

#include <torch/utils.h>

#include "core/error.h"
#include "moe/engine/engine.h"
#include "moe/model/checkpoint.h"
#include "moe/model/family.h"
#include "moe/model/gguf_export.h"
#include "moe/model/safetensors.h"
#include "moe/model/tiny_model.h"
#include "moe/quant/gguf_file.h"
#include "moe/quant/quantize.h"
#include "engine_test_util.h"
#include "moe_test_util.h"

namespace ferry::moe {
namespace {

using testing::file_bytes;
using testing::TempDir;

constexpr std::uint64_t kSeed = 3;

// A tiny gpt-oss whose widths are whole MXFP4 blocks (2 layers: sliding, full).
MoeConfig tiny_mxfp4(bool mxfp4) {
  MoeConfig c = testing::tiny_config();
  c.model_type = "gpt_oss";
  c.num_layers = 2;
  c.hidden_size = 64;
  c.intermediate_size = 32;
  c.sliding_window = 4;
  c.mxfp4_experts = mxfp4;
  prepare_tiny_config(c);
  return tiny_model_config(c);
}

std::string make(const TempDir& dir, const std::string& name, bool mxfp4) {
  TinyModelOptions o;
  o.config = tiny_mxfp4(mxfp4);
  o.seed = kSeed;
  make_tiny_model(dir / name, o);
  return dir / name;
}

// transformers' integrations/mxfp4.py: FP4_VALUES, and a weight ldexp(FP4_VALUES[code], scale − 127).
constexpr double kFp4Values[16] = {+0.0, +0.5, +1.0, +1.5, +2.0, +3.0, +4.0, +6.0,
                                   -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0};

// Weight k of row `row` of HF's `blocks` [.., rows, G, 16] / `scales` [.., rows, G] as transformers
// dequantizes it: byte k/2 of its block, the low nibble for even k.
float hf_weight(const std::uint8_t* blocks, const std::uint8_t* scales, std::int64_t row, std::int64_t groups,
                std::int64_t k) {
  const std::int64_t block = row * groups + k / 32;
  const std::uint8_t byte = blocks[block * 16 + k % 32 / 2];
  return static_cast<float>(std::ldexp(kFp4Values[k % 2 == 0 ? byte & 0x0F : byte >> 4], scales[block] - 127));
}

TEST(GptOssMxfp4, ExpertsAreReadAsTheirBlocks) {
  TempDir dir;
  const std::string path = make(dir, "mx", true);
  const MoeConfig c = tiny_mxfp4(true);
  const std::int64_t E = c.num_experts, H = c.hidden_size, I = c.intermediate_size;
  const SafetensorsFile f = SafetensorsFile::open(path + "/model.safetensors");
  const TensorInfo& gu = f.at("model.layers.1.mlp.experts.gate_up_proj_blocks");
  const TensorInfo& gus = f.at("model.layers.1.mlp.experts.gate_up_proj_scales");
  const TensorInfo& dn = f.at("model.layers.1.mlp.experts.down_proj_blocks");
  const TensorInfo& dns = f.at("model.layers.1.mlp.experts.down_proj_scales");
  EXPECT_EQ(gu.shape, std::vector<std::int64_t>({E, 2 * I, H / 32, 16}));
  EXPECT_EQ(gus.shape, std::vector<std::int64_t>({E, 2 * I, H / 32}));
  EXPECT_EQ(dn.shape, std::vector<std::int64_t>({E, H, I / 32, 16}));
  EXPECT_EQ(dns.shape, std::vector<std::int64_t>({E, H, I / 32}));
  EXPECT_EQ(gu.dtype, DType::kU8);
  EXPECT_EQ(dns.dtype, DType::kU8);
  EXPECT_EQ(f.find("model.layers.1.mlp.experts.gate_up_proj"), nullptr);
  EXPECT_EQ(f.at("model.layers.1.mlp.experts.gate_up_proj_bias").dtype, DType::kF32);

  const auto ck = Checkpoint::open(path);
  ASSERT_TRUE(ck->config().mxfp4_experts);
  TensorNames n(c);
  const std::vector<NamedTensor> weights = random_tensors(tiny_mxfp4(false), kSeed);  // the floats quantized
  auto floats_of = [&](const std::string& name) {
    for (const NamedTensor& t : weights)
      if (t.name == name) return t.values;
    ADD_FAILURE() << name;
    return std::vector<float>();
  };
  const auto* gu_bytes = reinterpret_cast<const std::uint8_t*>(f.data(gu));
  const auto* gu_scales = reinterpret_cast<const std::uint8_t*>(f.data(gus));
  const auto* dn_bytes = reinterpret_cast<const std::uint8_t*>(f.data(dn));
  const auto* dn_scales = reinterpret_cast<const std::uint8_t*>(f.data(dns));
  const int e = 3;
  for (int which : {1, 3, 2}) {
    const std::string name = n.expert(1, e, which);
    const std::int64_t rows = which == 2 ? H : I, cols = which == 2 ? I : H;
    ASSERT_EQ(ck->stored_blocks(name), quant::QuantType::kMXFP4) << name;
    // The blocks: what ggml's quantizer makes of the float weights.
    std::vector<std::byte> want(quant::quant_matrix_bytes(quant::QuantType::kMXFP4, rows, cols));
    const std::vector<float> values = floats_of(name);
    for (std::int64_t r = 0; r < rows; ++r)
      quant::quantize_row(quant::QuantType::kMXFP4, values.data() + r * cols,
                          want.data() + r * quant::quant_row_bytes(quant::QuantType::kMXFP4, cols), cols);
    std::vector<std::byte> got(want.size());
    ck->read_blocks(name, got.data());
    EXPECT_EQ(got, want) << name;
    // Each weight: transformers' dequantization of the file's bytes (gate: row 2i of the expert's
    // gate_up rows, up: row 2i + 1, down: row h).
    std::vector<float> w(static_cast<std::size_t>(rows * cols));
    ck->read_f32(name, {rows, cols}, w.data());
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t k = 0; k < cols; ++k) {
        const float hf = which == 2 ? hf_weight(dn_bytes, dn_scales, e * H + r, I / 32, k)
                                    : hf_weight(gu_bytes, gu_scales, e * 2 * I + 2 * r + (which == 3), H / 32, k);
        ASSERT_EQ(w[r * cols + k], hf) << name << " " << r << " " << k;
      }
  }
  EXPECT_FALSE(ck->stored_blocks(n.expert_bias(1, 1)).has_value());  // the biases stay floats
}

// `ferry moe quantize --type F32` of the MXFP4 checkpoint writes the converter's file: the experts'
// blocks as they are (MXFP4_MOE), the rest F32; the engine computes the same logits on both,
// bit for bit, under every policy; within the rounding of MXFP4's Q8_0 activations of the reference
// forward (which dequantizes the experts), and equal to it with the experts dequantized at load.
TEST(GptOssMxfp4, EngineComputesTheBlocksAsTheConvertersGgufFile) {
  torch::set_num_threads(1);
  TempDir dir;
  const std::string hf = make(dir, "mx", true);
  GgufExportOptions g;
  g.threads = 1;
  const GgufExportReport r = export_gguf(hf, dir / "mx.gguf", g);
  EXPECT_EQ(r.file_type, quant::LlamaFileType::kMostlyMXFP4_MOE);
  for (const GgufExportTensor& t : r.tensors)
    EXPECT_EQ(t.type, t.name.find("_exps.weight") != std::string::npos ? quant::QuantType::kMXFP4 : quant::QuantType::kF32)
        << t.name;
  const quant::GgufFile file = quant::GgufFile::open(dir / "mx.gguf");
  EXPECT_EQ(file.find("general.file_type")->i, 38);  // LLAMA_FTYPE_MOSTLY_MXFP4_MOE
  const auto ck = Checkpoint::open(hf);
  const MoeConfig& c = ck->config();
  TensorNames n(c);
  const std::span<const std::byte> up = file.data(*file.find_tensor("blk.0.ffn_up_exps.weight"));
  const std::size_t per = up.size() / c.num_experts;
  for (int e = 0; e < c.num_experts; ++e) {
    std::vector<std::byte> blocks(per);
    ck->read_blocks(n.expert(0, e, 3), blocks.data());
    EXPECT_TRUE(std::equal(blocks.begin(), blocks.end(), up.begin() + e * per)) << "expert " << e;
  }

  const TokenBatch seqs = testing::random_tokens(2, 12, 5);
  EngineOptions all_in;
  all_in.device_mem = "100%";
  all_in.link = "none";
  const std::vector<float> expect = testing::run_logits(*MoeEngine::open(dir / "mx.gguf", all_in), seqs, 6);
  for (const char* policy : {"ondemand", "lru", "fiddler", "prescope"}) {
    EngineOptions o;
    o.policy = policy;
    o.device_mem = "50%";
    auto eng = MoeEngine::open(hf, o);
    EXPECT_EQ(eng->expert_bytes(), 3 * quant::quant_matrix_bytes(quant::QuantType::kMXFP4, 32, 64)) << policy;
    EXPECT_EQ(testing::run_logits(*eng, seqs, 6), expect) << policy;
  }
  const std::vector<float> ref = testing::reference_logits(hf, seqs);
  EXPECT_LT(testing::max_diff_vs(*MoeEngine::open(hf, all_in), seqs, ref, 6), 5e-2);
  EngineOptions dequantized = all_in;
  dequantized.weights = "F32";
  EXPECT_LT(testing::max_diff_vs(*MoeEngine::open(hf, dequantized), seqs, ref, 6), 1e-4);
}

// MXFP4_MOE from the MXFP4 checkpoint (blocks copied) is the file from the float checkpoint of the
// same weights (blocks quantized there): the same bytes. Q8_0 quantizes the experts from their values.
TEST(GptOssMxfp4, QuantizeKeepsTheBlocksAsTheyAre) {
  TempDir dir;
  const std::string mx = make(dir, "mx", true), fl = make(dir, "float", false);
  GgufExportOptions g;
  g.file_type = quant::LlamaFileType::kMostlyMXFP4_MOE;
  g.threads = 1;
  g.name = "tiny";
  export_gguf(mx, dir / "mx.gguf", g);
  export_gguf(fl, dir / "float.gguf", g);
  EXPECT_EQ(file_bytes(dir / "mx.gguf"), file_bytes(dir / "float.gguf"));
  g.file_type = quant::LlamaFileType::kMostlyQ8_0;
  for (const GgufExportTensor& t : export_gguf(mx, dir / "q8.gguf", g).tensors) {
    if (t.name.find("_exps.weight") != std::string::npos) {
      EXPECT_EQ(t.type, quant::QuantType::kQ8_0) << t.name;
    }
  }
}

std::string open_error(const std::string& dir, const std::string& link = "none") {
  try {
    EngineOptions o;
    o.link = link;
    MoeEngine::open(dir, o);
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

// The file link streams experts stored apart in the blocks the engine computes on: refused for
// fused MXFP4 experts, naming the way out. A checkpoint whose tensors do not match what its
// config.json announces is refused naming the tensor.
TEST(GptOssMxfp4, WhatDoesNotFitIsRefusedByName) {
  TempDir dir;
  const std::string mx = make(dir, "mx", true);
  EXPECT_NE(open_error(mx, "file").find("stream from a GGUF file in that type (ferry moe quantize)"), std::string::npos)
      << open_error(mx, "file");

  const MoeConfig c = tiny_mxfp4(true);
  const std::vector<NamedTensor> floats = fuse_expert_tensors(tiny_mxfp4(false), random_tensors(c, kSeed));
  write_checkpoint(dir / "floats", c, floats, {});  // config.json says MXFP4, the file holds floats
  EXPECT_NE(open_error(dir / "floats").find("gate_up_proj' holds floats"), std::string::npos)
      << open_error(dir / "floats");

  std::vector<NamedTensor> blocks = fuse_expert_tensors(c, random_tensors(c, kSeed));
  write_checkpoint(dir / "unannounced", tiny_mxfp4(false), blocks, {});  // blocks without quantization_config
  EXPECT_NE(open_error(dir / "unannounced").find("has no quantization_config"), std::string::npos)
      << open_error(dir / "unannounced");

  for (NamedTensor& t : blocks)
    if (t.name == "model.layers.1.mlp.experts.down_proj_scales") {
      t.values.assign(t.bytes.begin(), t.bytes.end());  // the scales as F32
      t.bytes.clear();
    }
  write_checkpoint(dir / "f32_scales", c, blocks, {});
  EXPECT_NE(open_error(dir / "f32_scales").find("down_proj_scales' in"), std::string::npos) << open_error(dir / "f32_scales");
  EXPECT_NE(open_error(dir / "f32_scales").find("is F32, expected U8"), std::string::npos) << open_error(dir / "f32_scales");
}

}  // namespace
}  // namespace ferry::moe
