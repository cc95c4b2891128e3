// The kernels behind matmul.h, one per weight format, in a portable, an AVX2 and an AVX-512 VNNI
// build (and Q4_K's and Q6_K's several-token products on AMX tiles). Internal to moe/quant. Dot products: `w` is one row of weights as stored, `x` one
// activation row in the format activation_format() names, `n` the row length. Group kernels:
// the 8 rows of one row group (row_groups.h) times `tokens` activation rows. Q8_0 activation rows
// are n/32 Q8_0 blocks followed by the n/32 blocks' sums of quants (int32), which the group
// kernels' unsigned products need (Σ (u − o)·x = Σ u·x − o·Σ x).
#pragma once

#include <cstddef>

namespace ferry::moe::quant::kernels {

// Q8_K activations: d = max|x|/127 and q = round(x/d) per 256 values, plus the sums of each 16.
void quantize_row_q8_k(const float* x, void* out, std::size_t n);

// One weight row as stored times `tokens` activation rows (x_row bytes apart): y[t·y_stride].
using TokensFn = void (*)(const void* w, std::size_t n, const std::byte* x, std::size_t x_row, std::size_t tokens,
                          float* y, std::size_t y_stride);

struct DotTable {
  float (*f32)(const void* w, const void* x, std::size_t n);
  float (*f16)(const void* w, const void* x, std::size_t n);
  float (*bf16)(const void* w, const void* x, std::size_t n);
  float (*q8_0)(const void* w, const void* x, std::size_t n);
  float (*q4_0)(const void* w, const void* x, std::size_t n);
  float (*q4_k)(const void* w, const void* x, std::size_t n);
  float (*q6_k)(const void* w, const void* x, std::size_t n);
  // Several activation rows at once (the weights read once for all), for the row-by-row formats
  // that batches use most: f32 and Q6_K.
  TokensFn f32_tokens;
  TokensFn q6_k_tokens;
  // Q5_K, which llama.cpp's Q4_K_M mix stores the attention output in.
  float (*q5_k)(const void* w, const void* x, std::size_t n);
  // MXFP4 with Q8_0 activations.
  float (*mxfp4)(const void* w, const void* x, std::size_t n);
};
const DotTable& portable_dots();
const DotTable& avx2_dots();  // call only when the CPU has AVX2, FMA and F16C

// y[t·y_stride + 8g + r] for rows r = 0..7 of `groups` consecutive row groups g (the first at
// `group`) and activation rows t < tokens (x_row bytes apart).
using GroupFn = void (*)(const void* group, std::size_t groups, std::size_t n, const std::byte* x, std::size_t x_row,
                         std::size_t tokens, float* y, std::size_t y_stride);
struct GroupTable {
  GroupFn q8_0;
  GroupFn q4_0;
  GroupFn q4_k;
  GroupFn mxfp4;
};
const GroupTable& portable_groups();
const GroupTable& avx2_groups();
const GroupTable& vnni_groups();  // call only when the CPU has AVX-512 F/BW/VL and VNNI as well
const GroupTable& amx_groups();   // call only when amx_usable() as well
// `rows` weight rows as stored (one after the other) times `tokens` activation rows (x_row bytes
// apart): y[t·y_stride + r], for the row-by-row formats whose kernel takes several rows at once.
using RowsFn = void (*)(const void* w, std::size_t rows, std::size_t n, const std::byte* x, std::size_t x_row,
                        std::size_t tokens, float* y, std::size_t y_stride);
struct RowsTable {
  RowsFn q6_k;
};
const RowsTable& amx_rows();  // call only when amx_usable() as well

// Whether this CPU has AMX-TILE and AMX-INT8 and the OS lets this process use the tiles (on Linux
// asked once, arch_prctl(ARCH_REQ_XCOMP_PERM) for the tile data state).
bool amx_usable();

}  // namespace ferry::moe::quant::kernels
