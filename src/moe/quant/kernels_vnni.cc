// The row-group kernels (kernels_groups_x86.h) with AVX-512 VNNI's vpdpbusd on 256-bit vectors:
// one instruction multiplies unsigned by signed bytes and adds each 4 products into a 32-bit
// lane. Q8_0 weights become unsigned by w + 128 (an xor of the sign bit), which adds 128·Σx to
// the products; 4-bit weights are unsigned as stored (MXFP4's after a table lookup). matmul.cc
// calls these only after checking the CPU (AVX-512 F, BW, VL and VNNI: Intel since Ice Lake, AMD
// since Zen 4).
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "moe/quant/blocks.h"
#include "moe/quant/kernels.h"
#include "moe/quant/row_groups.h"

#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")

#include "moe/quant/kernels_groups_x86.h"

namespace ferry::moe::quant::kernels {
namespace {

struct Vnni {
  static constexpr std::int32_t kQ8Offset = 128;
  static __m256i prep_q8(__m256i w) { return _mm256_xor_si256(w, _mm256_set1_epi8(static_cast<char>(0x80))); }
  static __m256i dot_q8(__m256i acc, __m256i w, __m256i x) { return _mm256_dpbusd_epi32(acc, w, x); }
  static __m256i dot_u4(__m256i acc, __m256i u, __m256i x) { return _mm256_dpbusd_epi32(acc, u, x); }
};

}  // namespace

const GroupTable& vnni_groups() {
  static const GroupTable table{group_kernel<Vnni, GroupFormat::kQ8_0>, group_kernel<Vnni, GroupFormat::kQ4_0>,
                                group_kernel_q4_k<Vnni>, group_kernel<Vnni, GroupFormat::kMXFP4>};
  return table;
}

}  // namespace ferry::moe::quant::kernels
