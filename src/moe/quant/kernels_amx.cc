// Q4_K's row-group product for several tokens on AMX tiles (Intel since Sapphire Rapids), the
// other formats and fewer tokens as the AVX-512 VNNI kernels (kernels_vnni.cc) compute them.
//
// Per super-block of 256 and sub-block j of 32 weights, one tile product (TDPBSUD: signed bytes
// times unsigned bytes, 4 products per 32-bit sum) gives C_j[t][r] = Σ_k x_t[k]·q_r[k] for 16
// tokens t (A: their Q8_K quants, read in place, x_row bytes apart) and 16 weight rows r (B: two
// row groups' 4-bit levels, unpacked once per call into the layout B takes: per 4 weights k..k+3
// one 64-byte row of 16 weight rows × 4 bytes). Q4_K's scales are per 32 weights and row, so K =
// 32 per product, and the rest is the float arithmetic of the VNNI kernel (kernels_groups_x86.h)
// in its order, 16 rows to a vector:
//
//   y[t][r] = Σ_b d_x·(d·Σ_j sc_j·C_j − dmin·Σ_j m_j·bsum_j)
//
// The integer sums are exact and the float operations on each output the same, so the results
// are bit for bit the VNNI kernel's (its Σ_j m_j·bsum_j is exact in float as well: |·| < 2^24).
// ggml's AMX kernels (ggml-cpu/amx/mmq.cpp) take Q4_K the same way, K = 32 per tile product.
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "moe/quant/blocks.h"
#include "moe/quant/kernels.h"
#include "moe/quant/kernels_amx_tiles.h"
#include "moe/quant/row_groups.h"

namespace ferry::moe::quant::kernels {

// Compiled for any x86-64 (above the target pragma).
bool amx_usable() {
  static const bool usable = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    constexpr unsigned kAmxTile = 1u << 24, kAmxInt8 = 1u << 25;  // CPUID.(7, 0):EDX
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0 || (d & kAmxTile) == 0 || (d & kAmxInt8) == 0) return false;
#if defined(__linux__)
    // Linux hands out the 8 KiB tile data state only on request (since 5.16); refused, no AMX.
    constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
    return false;
#endif
  }();
  return usable;
}

void* amx_scratch(AmxScratch which, std::size_t bytes) {
  thread_local std::vector<unsigned char> buffers[static_cast<int>(AmxScratch::kCount)];
  std::vector<unsigned char>& b = buffers[static_cast<int>(which)];
  if (b.size() < bytes + 63) b.resize(bytes + 63);
  return b.data() + (-reinterpret_cast<std::uintptr_t>(b.data()) & 63);
}

}  // namespace ferry::moe::quant::kernels

#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,amx-tile,amx-int8")
// GCC 12's 512-bit intrinsics start from a self-initialised undefined vector (__Y = __Y), which
// -Wmaybe-uninitialized reports wherever they are inlined.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace ferry::moe::quant::kernels {
namespace {

// Tokens from which the tiles beat the VNNI kernel: bench_moe_kernels, Q4_K 2048 x 768, 2 threads,
// measured VNNI 10% faster at 8 tokens, the tiles 25% faster at 16.
constexpr std::size_t kMinTokens = 12;
constexpr int kTile = 16;                                    // tokens (A, C rows) and weight rows (two groups)
constexpr std::size_t kGroupBlock = kRowGroup * sizeof(BlockQ4_K);
constexpr std::size_t kSubTile = 8 * 64;                     // one sub-block's B: 8 rows of 16 × 4 bytes
constexpr std::size_t kQsOffset = 4;                         // BlockQ8_K's quants after its f32 scale

// tmm0, tmm1: A (16 tokens × 32 quants), tmm2, tmm3: B (8 × 64 bytes), tmm4..tmm7: C (16 × 16
// int32), so that the products of consecutive sub-blocks overlap.
void configure_tiles() {
  TileConfig c;
  for (int a : {0, 1}) c.rows[a] = kTile, c.colsb[a] = 32;
  for (int b : {2, 3}) c.rows[b] = 8, c.colsb[b] = 64;
  for (int s : {4, 5, 6, 7}) c.rows[s] = kTile, c.colsb[s] = 64;
  memory_barrier();
  _tile_loadconfig(&c);
}

// Per super-block of two groups, a lane per row (rows 8..15 zero without a second group).
struct PairScales {
  float d[kTile], dmin[kTile], sc[8][kTile], mn[8][kTile];
};

// Two groups' (g1 null: one group's) super-blocks: the levels as B tiles, sub-block j of super-block
// b at u + (8b + j)·kSubTile, and the scales and mins as floats.
void unpack_pair(const unsigned char* g0, const unsigned char* g1, std::size_t nb, unsigned char* u, PairScales* s) {
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  const __m512i k63 = _mm512_set1_epi32(63), k15 = _mm512_set1_epi32(15);
  for (std::size_t b = 0; b < nb; ++b, g0 += kGroupBlock, g1 = g1 ? g1 + kGroupBlock : nullptr) {
    auto half = [&](const unsigned char* g, std::size_t off) {
      return g ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(g + off)) : _mm_setzero_si128();
    };
    _mm512_storeu_ps(s[b].d, _mm512_cvtph_ps(_mm256_set_m128i(half(g1, 0), half(g0, 0))));
    _mm512_storeu_ps(s[b].dmin, _mm512_cvtph_ps(_mm256_set_m128i(half(g1, 16), half(g0, 16))));
    // Scale byte i of the 16 rows (8 bytes at 32 + 8i of each group); q4_k_scale_min on 16 lanes.
    auto byte_i = [&](int i) {
      const __m128i lo = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(g0 + 32 + 8 * i));
      const __m128i hi = g1 ? _mm_loadl_epi64(reinterpret_cast<const __m128i*>(g1 + 32 + 8 * i)) : _mm_setzero_si128();
      return _mm512_cvtepu8_epi32(_mm_unpacklo_epi64(lo, hi));
    };
    for (int j = 0; j < 4; ++j) {
      const __m512i a = byte_i(j), m = byte_i(j + 4), h = byte_i(j + 8);
      _mm512_storeu_ps(s[b].sc[j], _mm512_cvtepi32_ps(_mm512_and_si512(a, k63)));
      _mm512_storeu_ps(s[b].mn[j], _mm512_cvtepi32_ps(_mm512_and_si512(m, k63)));
      _mm512_storeu_ps(s[b].sc[j + 4], _mm512_cvtepi32_ps(_mm512_or_si512(
                                           _mm512_and_si512(h, k15), _mm512_slli_epi32(_mm512_srli_epi32(a, 6), 4))));
      _mm512_storeu_ps(s[b].mn[j + 4], _mm512_cvtepi32_ps(_mm512_or_si512(
                                           _mm512_srli_epi32(h, 4), _mm512_slli_epi32(_mm512_srli_epi32(m, 6), 4))));
    }
    // Chunk k of pair p (32 bytes: 4 bytes of each of 8 rows) holds weights 4k.. of sub-blocks 2p
    // (low nibbles) and 2p + 1 (high): the two groups' chunks side by side are a B row of each.
    unsigned char* ub = u + b * 8 * kSubTile;
    for (int p = 0; p < 4; ++p)
      for (int k = 0; k < 8; ++k) {
        const std::size_t off = 128 + 256 * p + 32 * k;
        const __m256i v0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(g0 + off));
        const __m256i v1 = g1 ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(g1 + off)) : _mm256_setzero_si256();
        const __m512i v = _mm512_inserti64x4(_mm512_castsi256_si512(v0), v1, 1);
        _mm512_storeu_si512(ub + 2 * p * kSubTile + 64 * k, _mm512_and_si512(v, low4));
        _mm512_storeu_si512(ub + (2 * p + 1) * kSubTile + 64 * k, _mm512_and_si512(_mm512_srli_epi16(v, 4), low4));
      }
  }
}

// The activations' sub-block sums Σ q_x (bsum_j, exact in float) of each token and super-block:
// bsums[(t·nb + b)·8 + j].
void sub_block_sums(const unsigned char* x, std::size_t x_row, std::size_t tokens, std::size_t nb, float* bsums) {
  for (std::size_t t = 0; t < tokens; ++t)
    for (std::size_t b = 0; b < nb; ++b, bsums += 8) {
      const auto& xq = reinterpret_cast<const BlockQ8_K*>(x + t * x_row)[b];
      for (int j = 0; j < 8; ++j) bsums[j] = static_cast<float>(xq.bsums[2 * j] + xq.bsums[2 * j + 1]);
    }
}

// 16 tokens from x (x_row bytes apart, their sub-block sums at bsums) times the unpacked pair;
// writes tokens [t0, t1) of the tile, rows 0..15 (`rows` = 16) or 0..7.
void pair_tile(const unsigned char* u, const PairScales* s, std::size_t nb, const unsigned char* x, std::size_t x_row,
               const float* bsums, int t0, int t1, int rows, float* y, std::size_t y_stride) {
  alignas(64) std::int32_t c[8][kTile][kTile];  // [sub-block][token][row]
  alignas(64) float acc[kTile][kTile] = {};
  memory_barrier();  // u and x are written
  for (std::size_t b = 0; b < nb; ++b) {
    const unsigned char* xb = x + b * sizeof(BlockQ8_K) + kQsOffset;
    const unsigned char* ub = u + b * 8 * kSubTile;
    // Sub-block j's product into C tile 4 + j % 4, stored two products later, so that each
    // product's latency passes while the next one runs (the tile operations start in order).
#define FERRY_AMX_PRODUCT(a, b, cc, j)              \
  _tile_loadd(a, xb + 32 * (j), x_row);             \
  _tile_loadd(b, ub + (j) * kSubTile, 64);          \
  _tile_zero(cc);                                   \
  _tile_dpbsud(cc, a, b)
    FERRY_AMX_PRODUCT(0, 2, 4, 0);
    FERRY_AMX_PRODUCT(1, 3, 5, 1);
    FERRY_AMX_PRODUCT(0, 2, 6, 2);
    _tile_stored(4, c[0], 64);
    FERRY_AMX_PRODUCT(1, 3, 7, 3);
    _tile_stored(5, c[1], 64);
    FERRY_AMX_PRODUCT(0, 2, 4, 4);
    _tile_stored(6, c[2], 64);
    FERRY_AMX_PRODUCT(1, 3, 5, 5);
    _tile_stored(7, c[3], 64);
    FERRY_AMX_PRODUCT(0, 2, 6, 6);
    _tile_stored(4, c[4], 64);
    FERRY_AMX_PRODUCT(1, 3, 7, 7);
    _tile_stored(5, c[5], 64);
    _tile_stored(6, c[6], 64);
    _tile_stored(7, c[7], 64);
#undef FERRY_AMX_PRODUCT
    const PairScales& ps = s[b];
    __m512 sc[8], mn[8];
    for (int j = 0; j < 8; ++j) sc[j] = _mm512_loadu_ps(ps.sc[j]), mn[j] = _mm512_loadu_ps(ps.mn[j]);
    const __m512 d = _mm512_loadu_ps(ps.d), dmin = _mm512_loadu_ps(ps.dmin);
    for (int t = t0; t < t1; ++t) {
      __m512 sum = _mm512_setzero_ps(), mins = _mm512_setzero_ps();
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j)
        sum = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(c[j][t])), sc[j], sum);
      const float* bs = bsums + (t * nb + b) * 8;
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) mins = _mm512_fmadd_ps(mn[j], _mm512_set1_ps(bs[j]), mins);
      const __m512 v = _mm512_fmsub_ps(d, sum, _mm512_mul_ps(dmin, mins));
      const float dx = reinterpret_cast<const BlockQ8_K*>(x + t * x_row)[b].d;
      _mm512_store_ps(acc[t], _mm512_fmadd_ps(_mm512_set1_ps(dx), v, _mm512_load_ps(acc[t])));
    }
  }
  const __mmask16 mask = rows == kTile ? 0xFFFF : 0x00FF;
  for (int t = t0; t < t1; ++t) _mm512_mask_storeu_ps(y + t * y_stride, mask, _mm512_load_ps(acc[t]));
}

void q4_k_tiles(const void* group, std::size_t groups, std::size_t n, const std::byte* x, std::size_t x_row,
                std::size_t tokens, float* y, std::size_t y_stride) {
  if (tokens < kMinTokens) return vnni_groups().q4_k(group, groups, n, x, x_row, tokens, y, y_stride);
  const std::size_t nb = n / kQK_K;
  auto* u = static_cast<unsigned char*>(amx_scratch(AmxScratch::kQ4kWeights, nb * 8 * kSubTile));
  auto* scales = static_cast<PairScales*>(amx_scratch(AmxScratch::kQ4kScales, nb * sizeof(PairScales)));
  // A tile reads 16 activation rows: fewer tokens are copied to 16 rows (the rest zero).
  const auto* xs = reinterpret_cast<const unsigned char*>(x);
  if (tokens < static_cast<std::size_t>(kTile)) {
    auto* padded = static_cast<unsigned char*>(amx_scratch(AmxScratch::kQ4kPadded, kTile * x_row));
    std::memcpy(padded, xs, tokens * x_row);
    std::memset(padded + tokens * x_row, 0, (kTile - tokens) * x_row);
    xs = padded;
  }
  const std::size_t rows_x = std::max<std::size_t>(tokens, kTile);  // activation rows at xs
  auto* bsums = static_cast<float*>(amx_scratch(AmxScratch::kQ4kSums, rows_x * nb * 8 * sizeof(float)));
  sub_block_sums(xs, x_row, rows_x, nb, bsums);
  configure_tiles();
  const auto* w = static_cast<const unsigned char*>(group);
  for (std::size_t g = 0; g < groups; g += 2) {
    const bool two = g + 1 < groups;
    unpack_pair(w + g * nb * kGroupBlock, two ? w + (g + 1) * nb * kGroupBlock : nullptr, nb, u, scales);
    for (std::size_t t = 0; t < tokens; t += kTile) {
      // The last tile ends at the last token, over tokens the one before it wrote.
      const std::size_t first = tokens < static_cast<std::size_t>(kTile) ? 0 : std::min(t, tokens - kTile);
      const std::size_t count = std::min<std::size_t>(kTile, tokens - first);
      pair_tile(u, scales, nb, xs + first * x_row, x_row, bsums + first * nb * 8, static_cast<int>(t - first),
                static_cast<int>(count), two ? kTile : static_cast<int>(kRowGroup), y + first * y_stride + g * kRowGroup,
                y_stride);
    }
  }
  _tile_release();
}

}  // namespace

const GroupTable& amx_groups() {
  const GroupTable& vnni = vnni_groups();
  static const GroupTable table{vnni.q8_0, vnni.q4_0, q4_k_tiles, vnni.mxfp4};
  return table;
}

}  // namespace ferry::moe::quant::kernels
