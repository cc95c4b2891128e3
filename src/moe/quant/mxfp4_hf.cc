#include "moe/quant/mxfp4_hf.h"

#include "moe/quant/blocks.h"

namespace ferry::moe::quant {
namespace {

constexpr std::size_t kHalf = kQK_MXFP4 / 2;  // 16: ggml's qs bytes, HF's block bytes

// Element k's 4-bit code in HF's packing.
std::uint8_t hf_code(const std::uint8_t* block, std::size_t k) {
  return static_cast<std::uint8_t>(k % 2 == 0 ? block[k / 2] & 0x0F : block[k / 2] >> 4);
}

}  // namespace

void mxfp4_blocks_from_hf(const std::uint8_t* scales, const std::uint8_t* blocks, std::size_t n, std::uint8_t* dst) {
  for (std::size_t b = 0; b < n; ++b, blocks += kHfMxfp4BlockBytes, dst += sizeof(BlockMXFP4)) {
    dst[0] = scales[b];
    for (std::size_t j = 0; j < kHalf; ++j)
      dst[1 + j] = static_cast<std::uint8_t>(hf_code(blocks, j) | hf_code(blocks, j + kHalf) << 4);
  }
}

void mxfp4_blocks_to_hf(const std::uint8_t* src, std::size_t n, std::uint8_t* scales, std::uint8_t* blocks) {
  for (std::size_t b = 0; b < n; ++b, src += sizeof(BlockMXFP4), blocks += kHfMxfp4BlockBytes) {
    scales[b] = src[0];
    // Element k's code: ggml's byte k % 16, low nibble for k < 16.
    auto code = [&](std::size_t k) {
      return static_cast<std::uint8_t>(k < kHalf ? src[1 + k] & 0x0F : src[1 + k - kHalf] >> 4);
    };
    for (std::size_t j = 0; j < kHfMxfp4BlockBytes; ++j)
      blocks[j] = static_cast<std::uint8_t>(code(2 * j) | code(2 * j + 1) << 4);
  }
}

}  // namespace ferry::moe::quant
