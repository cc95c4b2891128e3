// MXFP4 as Hugging Face checkpoints store it (transformers' integrations/mxfp4.py; gpt-oss's
// experts as *_blocks and *_scales) and as ggml's block_mxfp4 holds it (blocks.h). Both hold, per 32
// weights, one E8M0 byte e and 32 E2M1 codes, and both mean the same by them: HF dequantizes code q
// to ldexp(FP4_VALUES[q], e − 127) (convert_moe_packed_tensors), ggml to kMxfp4Values[q] · 2^(e − 128)
// with kMxfp4Values = 2 · FP4_VALUES, code for code. Only the packing differs:
//
//   HF:   scales [..., G] u8, one e per block; blocks [..., G, 16] u8, byte j = element 2j in the low
//         nibble, element 2j + 1 in the high one
//   ggml: block_mxfp4 {e, qs[16]}, qs[j] = element j in the low nibble, element j + 16 in the high one
//
// so that ggml's qs[j] = code(j) | code(j + 16) << 4, where code(k) is nibble k % 2 (0: low) of HF's
// byte k / 2 — what llama.cpp's converter computes (GptOssModel.transform_nibble_layout and
// repack_mxfp4 in convert_hf_to_gguf.py). Lossless both ways: only bits move.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ferry::moe::quant {

// HF's bytes per MXFP4 block (the scale apart).
constexpr std::size_t kHfMxfp4BlockBytes = 16;

// `n` blocks from HF's `scales` (n bytes) and `blocks` (16 n bytes) to ggml's block_mxfp4 at `dst`
// (17 n bytes).
void mxfp4_blocks_from_hf(const std::uint8_t* scales, const std::uint8_t* blocks, std::size_t n, std::uint8_t* dst);

// The inverse: `n` of ggml's block_mxfp4 at `src` to HF's `scales` (n bytes) and `blocks` (16 n bytes).
void mxfp4_blocks_to_hf(const std::uint8_t* src, std::size_t n, std::uint8_t* scales, std::uint8_t* blocks);

}  // namespace ferry::moe::quant
