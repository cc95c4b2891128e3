// Matrix products on quantized weights, computed on the blocks (no weight is dequantized to a
// float array). As in ggml, the activations are first converted to an integer format matched to
// the weights', and each block's product is an integer dot product scaled by the two blocks'
// scales:
//
//   weights F32/F16/BF16   activations f32      y = Σ w·x (f16/bf16 widened on the fly)
//   weights Q8_0, Q4_0     activations Q8_0     y = Σ_blocks d_w·d_x·Σ q_w·q_x
//   weights MXFP4          activations Q8_0     y = Σ_blocks 2^(e−128)·d_x·Σ v[q_w]·q_x  (v = 2·E2M1, int8)
//   weights Q4_K           activations Q8_K     y = Σ_blocks d_x·(d_w·Σ_j sc_j·Σ q_w·q_x − dmin_w·Σ_j m_j·Σ q_x)
//   weights Q6_K           activations Q8_K     y = Σ_blocks d_w·d_x·Σ_g sc_g·Σ (q_w − 32)·q_x
//
// Q8_0 activations are quantized as Q8_0 weights are (quantize.h); Q8_K activations use
// d = max|x|/127, q = round(x/d) per 256 values, plus the sums of each 16 q for the mins.
// Weights are read in the kernel layout (row_groups.h: Q8_0, Q4_0, MXFP4 and Q4_K in groups of 8 rows).
// Kernels: AMX (AVX-512 VNNI's, with Q4_K's and Q6_K's products for several tokens on AMX tiles), AVX-512
// VNNI, AVX2+FMA or portable C++, the best the CPU has (checked at run time); all sum the same
// integer products, so they differ only in the order of float additions.
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

// The rows a thread's share of a matrix starts at a multiple of: kRowGroup for row-group formats.
std::size_t matmul_row_unit(QuantType type);

// y[b·y_stride + r] = Σ_k W[r, k]·x_b[k] for rows r in [row_begin, row_end) of W, `rows` rows of
// `n` weights in `type` at `w` in the kernel layout (row_groups.h), and `batch` activation rows
// from quantize_activations. row_begin and row_end are multiples of matmul_row_unit(type) (or
// `rows`); disjoint row ranges may run on different threads.
void matmul_rows(QuantType type, const void* w, std::size_t rows, std::size_t n, std::size_t row_begin,
                 std::size_t row_end, const std::byte* activations, std::size_t batch, float* y, std::size_t y_stride);

// The kernels in use: the best this CPU runs unless switched (tests and benchmarks compare them).
// Each a superset of the one before: a CPU that runs one runs those before it.
enum class Kernels { kPortable, kAvx2, kAvx512Vnni, kAmx };
const char* kernels_name(Kernels k);
Kernels best_matmul_kernels();
Kernels matmul_kernels();
// Process-wide; refuses (InvalidArgument) kernels this CPU cannot run.
void set_matmul_kernels(Kernels k);

}  // namespace ferry::moe::quant
