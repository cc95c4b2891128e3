// Matrix products on quantized weights, computed on the blocks (no weight is dequantized to a
// float array). As in ggml, the activations are first converted to an integer format matched to
// the weights', and each block's product is an integer dot product scaled by the two blocks'
// scales:
//
//   weights F32/F16/BF16   activations f32      y = Σ w·x (f16/bf16 widened on the fly)
//   weights Q8_0, Q4_0     activations Q8_0     y = Σ_blocks d_w·d_x·Σ q_w·q_x
//   weights Q4_K           activations Q8_K     y = Σ_blocks d_x·(d_w·Σ_j sc_j·Σ q_w·q_x − dmin_w·Σ_j m_j·Σ q_x)
//   weights Q6_K           activations Q8_K     y = Σ_blocks d_w·d_x·Σ_g sc_g·Σ (q_w − 32)·q_x
//
// Q8_0 activations are quantized as Q8_0 weights are (quantize.h); Q8_K activations use
// d = max|x|/127, q = round(x/d) per 256 values, plus the sums of each 16 q for the mins.
// Kernels: AVX2+FMA when the CPU has them (checked at run time), portable C++ otherwise; both
// sum the same integer products, so they differ only in the order of float additions.
#pragma once

#include <cstddef>
#include <vector>

#include "moe/quant/quant_type.h"

namespace ferry::moe::quant {

// The activation format the kernels use with weights of a type.
enum class ActivationFormat { kF32, kQ8_0, kQ8_K };
ActivationFormat activation_format(QuantType weights);
// Bytes of one activation row of `n` values for weights of `type`.
std::size_t activation_row_bytes(QuantType weights, std::size_t n);

// Converts `batch` rows of `n` floats (row stride n) to the activation format of `weights`,
// resizing `out` to batch × activation_row_bytes(weights, n).
void quantize_activations(QuantType weights, const float* x, std::size_t batch, std::size_t n,
                          std::vector<std::byte>& out);

// y[b·y_stride + r] = Σ_k W[r, k]·x_b[k] for rows r in [row_begin, row_end) of W (rows of `n`
// weights in `type`, contiguous from `w`) and `batch` activation rows from quantize_activations.
// Disjoint row ranges may run on different threads.
void matmul_rows(QuantType type, const void* w, std::size_t n, std::size_t row_begin, std::size_t row_end,
                 const std::byte* activations, std::size_t batch, float* y, std::size_t y_stride);

// Whether the AVX2 kernels are in use (the CPU has AVX2, FMA and F16C, and they are not
// switched off).
bool matmul_uses_avx2();
// Switches to the portable kernels (or back), process-wide: tests and benchmarks compare both.
void set_matmul_portable(bool portable);

}  // namespace ferry::moe::quant
