// MXFP4 as Hugging Face checkpoints pack it, to and from ggml's block_mxfp4 (moe/quant/mxfp4_hf.h):
// a hand-made block against the formulas (HF: byte j = element 2j | element 2j+1 << 4; ggml: qs[j] =
// element j | element j+16 << 4), against llama.cpp's converter's repacking step by step
// (GptOssModel.transform_nibble_layout, then the scale first), and against transformers'
// dequantization (convert_moe_packed_tensors: ldexp(FP4_VALUES[code], e − 127)) for every code at
// edge exponents: the same E8M0 byte means the same scale in both. Both ways lossless.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "moe/quant/blocks.h"
#include "moe/quant/dequantize.h"
#include "moe/quant/mxfp4_hf.h"
#include "moe/quant/quant_type.h"

namespace ferry::moe::quant {
namespace {

// transformers' integrations/mxfp4.py.
constexpr double kFp4Values[16] = {+0.0, +0.5, +1.0, +1.5, +2.0, +3.0, +4.0, +6.0,
                                   -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0};

// ldexp(FP4_VALUES[q], e − 127) in float32: ±Inf past its range, as the float product overflows.
float transformers_weight(int q, int e) {
  const double w = std::ldexp(kFp4Values[q], e - 127);
  if (std::fabs(w) >= std::ldexp(1.0, 128)) return static_cast<float>(std::copysign(INFINITY, w));
  return static_cast<float>(w);  // exact: a 2-bit significand scaled into float32's range
}

// An HF block whose element k holds `code(k)`.
template <typename F>
std::vector<std::uint8_t> hf_block(F code) {
  std::vector<std::uint8_t> b(kHfMxfp4BlockBytes);
  for (int j = 0; j < 16; ++j) b[j] = static_cast<std::uint8_t>(code(2 * j) | code(2 * j + 1) << 4);
  return b;
}

// convert_hf_to_gguf.py's GptOssModel.transform_nibble_layout on one block's 16 bytes, as written
// there (uint8 arithmetic: shifts wrap), then repack_mxfp4's concatenation, scale first.
std::vector<std::uint8_t> converter_repack(std::uint8_t scale, const std::vector<std::uint8_t>& hf) {
  std::uint8_t t[16], out[16];
  for (int i = 0; i < 16; ++i) t[i] = static_cast<std::uint8_t>((hf[i] & 0x0F) << 4 | (hf[i] & 0xF0) >> 4);  // swap
  for (int i = 0; i < 8; ++i) {  // a = t[0:8], b = t[8:16]; stack((x0, x1), dim=2) interleaves
    const std::uint8_t a = t[i], b = t[8 + i];
    out[2 * i] = static_cast<std::uint8_t>((a & 0xF0) | (b >> 4));
    out[2 * i + 1] = static_cast<std::uint8_t>(static_cast<std::uint8_t>(a << 4) | (b & 0x0F));
  }
  std::vector<std::uint8_t> r{scale};
  for (std::uint8_t o : out) r.push_back(static_cast<std::uint8_t>((o & 0xF0) >> 4 | (o & 0x0F) << 4));  // swap once more
  return r;
}

TEST(Mxfp4Hf, AHandMadeBlockRepacksByTheFormulas) {
  auto code = [](int k) { return (5 * k + 3) % 16; };  // every code, in no nibble-friendly order
  const std::vector<std::uint8_t> hf = hf_block(code);
  const std::uint8_t scale = 0x7C;
  std::vector<std::uint8_t> ggml(sizeof(BlockMXFP4));
  mxfp4_blocks_from_hf(&scale, hf.data(), 1, ggml.data());
  EXPECT_EQ(ggml[0], scale);
  for (int j = 0; j < 16; ++j) EXPECT_EQ(ggml[1 + j], code(j) | code(j + 16) << 4) << j;
  EXPECT_EQ(ggml, converter_repack(scale, hf));
  std::uint8_t scale_back = 0;
  std::vector<std::uint8_t> hf_back(kHfMxfp4BlockBytes);
  mxfp4_blocks_to_hf(ggml.data(), 1, &scale_back, hf_back.data());
  EXPECT_EQ(scale_back, scale);
  EXPECT_EQ(hf_back, hf);
}

TEST(Mxfp4Hf, TransformersDequantizationEqualsGgmlsOfTheRepackedBlock) {
  for (int e : {0, 1, 2, 100, 126, 127, 128, 200, 252, 254}) {
    for (int shift : {0, 7}) {  // each code at even and odd, low- and high-half positions
      auto code = [&](int k) { return (k + shift) % 16; };
      const std::vector<std::uint8_t> hf = hf_block(code);
      const auto scale = static_cast<std::uint8_t>(e);
      std::vector<std::uint8_t> ggml(sizeof(BlockMXFP4));
      mxfp4_blocks_from_hf(&scale, hf.data(), 1, ggml.data());
      std::vector<float> got(kQK_MXFP4);
      dequantize_row(QuantType::kMXFP4, ggml.data(), got.data(), got.size());
      for (int k = 0; k < kQK_MXFP4; ++k) {
        const float want = transformers_weight(code(k), e);
        // Code 8 is −0 to HF and +0 to ggml (kvalues_mxfp4[8] = 0): equal as numbers.
        EXPECT_EQ(got[k], want) << "e " << e << " element " << k << " code " << code(k);
      }
    }
  }
}

TEST(Mxfp4Hf, BothWaysAreLossless) {
  std::mt19937 rng(7);
  const std::size_t n = 37;
  std::vector<std::uint8_t> scales(n), blocks(n * kHfMxfp4BlockBytes), ggml(n * sizeof(BlockMXFP4));
  for (auto& b : scales) b = static_cast<std::uint8_t>(rng());
  for (auto& b : blocks) b = static_cast<std::uint8_t>(rng());
  mxfp4_blocks_from_hf(scales.data(), blocks.data(), n, ggml.data());
  for (std::size_t b = 0; b < n; ++b) {  // block by block what the converter writes
    const std::vector<std::uint8_t> one(blocks.begin() + b * 16, blocks.begin() + (b + 1) * 16);
    EXPECT_EQ(std::vector<std::uint8_t>(ggml.begin() + b * 17, ggml.begin() + (b + 1) * 17), converter_repack(scales[b], one));
  }
  std::vector<std::uint8_t> scales_back(n), blocks_back(blocks.size());
  mxfp4_blocks_to_hf(ggml.data(), n, scales_back.data(), blocks_back.data());
  EXPECT_EQ(scales_back, scales);
  EXPECT_EQ(blocks_back, blocks);
}

}  // namespace
}  // namespace ferry::moe::quant
