// Quantized rows back to float32, exactly as ggml's dequantize_row_* compute them (same
// operations in the same order, so the floats are bit-identical).
#pragma once

#include <cstddef>

#include "moe/quant/quant_type.h"

namespace ferry::moe::quant {

// Converts `n` weights stored in `type` at `src` (quant_row_bytes(type, n) bytes, any
// alignment) to float32 at `dst`.
void dequantize_row(QuantType type, const void* src, float* dst, std::size_t n);

}  // namespace ferry::moe::quant
