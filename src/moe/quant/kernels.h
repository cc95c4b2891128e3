// The per-block dot products behind matmul.h, one per weight format, in a portable and an
// AVX2 build. Internal to moe/quant. `w` is one row of weights, `x` one activation row in the
// format activation_format() names, `n` the row length.
#pragma once

#include <cstddef>

namespace ferry::moe::quant::kernels {

// Q8_K activations: d = max|x|/127 and q = round(x/d) per 256 values, plus the sums of each 16.
void quantize_row_q8_k(const float* x, void* out, std::size_t n);

struct DotTable {
  float (*f32)(const void* w, const void* x, std::size_t n);
  float (*f16)(const void* w, const void* x, std::size_t n);
  float (*bf16)(const void* w, const void* x, std::size_t n);
  float (*q8_0)(const void* w, const void* x, std::size_t n);
  float (*q4_0)(const void* w, const void* x, std::size_t n);
  float (*q4_k)(const void* w, const void* x, std::size_t n);
  float (*q6_k)(const void* w, const void* x, std::size_t n);
};
const DotTable& portable_dots();
const DotTable& avx2_dots();  // call only when the CPU has AVX2, FMA and F16C

}  // namespace ferry::moe::quant::kernels
