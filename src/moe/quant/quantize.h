// float32 rows to GGUF's block formats, with the reference quantizers llama.cpp uses to write
// model files (ggml-quants.c, quantize_row_*_ref; no importance matrix):
//
//   Q8_0  d = max|x|/127, q = round(x/d)
//   Q4_0  d = x_m/−8 where x_m is the weight of largest magnitude (sign kept), q = min(15, ⌊x/d + 8.5⌋)
//   Q4_K  per 32-weight sub-block a scale s and min m fitted by weighted least squares over a
//         grid of 21 candidate scales (weights √(mean x²) + |x|); s and m quantized to 6 bits
//         against the block's largest, then q = clamp(round((x + m)/s), 0, 15)
//   Q6_K  per 16-weight group a scale fitted by make_qx_quants (19 candidate scales, weights x²);
//         scales quantized to int8 against the largest, q = clamp(round(x/(d·sc)), −32, 31) + 32
//   MXFP4 e = ⌊log2 max|x|⌋ + 125, q = the E2M1 code nearest x/2^(e−127) (the first of equals)
//
// The same float operations in the same order as ggml's, so Q8_0, Q4_0 and MXFP4 (and, with the same
// compiler semantics, the K-quants) come out byte for byte as llama-quantize writes them.
#pragma once

#include <cstddef>

#include "moe/quant/quant_type.h"

namespace ferry::moe::quant {

// Converts `n` float32 weights at `src` to `type` at `dst` (quant_row_bytes(type, n) bytes).
void quantize_row(QuantType type, const float* src, void* dst, std::size_t n);

}  // namespace ferry::moe::quant
