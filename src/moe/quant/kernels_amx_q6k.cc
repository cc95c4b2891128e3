// Q6_K's product for several tokens on AMX tiles (Intel since Sapphire Rapids); fewer tokens as
// the AVX2 kernel (kernels_avx2.cc) computes them, one weight row at a time.
//
// Q6_K's scales are per 16 weights and row, so a tile product per sub-block would use a quarter
// of a tile's K and leave 16 float scalings per super-block and output. Instead each weight is
// unpacked with its scale folded in, v = (q − 32)·sc (|v| ≤ 4096), split into two int8 parts
// v = 64·h + l (h in [−63, 64], l in [−32, 31]), so that a super-block's integer sum is two full
// tile products (TDPBSSD, K = 64) per 64 weights:
//
//   y[t][r] = Σ_b d_x·d_w·(64·C_h + C_l),   C_h = Σ_k h_rk·x_tk, C_l = Σ_k l_rk·x_tk over block b
//
// 16 weight rows are A (unpacked two super-blocks at a time into 16 × 64-byte tiles, no
// transposition), 16 tokens B (their Q8_K quants, 4 bytes of each token per B row, packed once per
// call, in the order the unpacking leaves the weights in). The
// integer sums are exact (|64·C_h + C_l| ≤ 256·127·4096 < 2^31) and equal the AVX2 kernel's;
// float rounding enters only in d_x·d_w, the conversion of the block's sum, its fused
// multiply-add and the sum over blocks, as in the AVX2 kernel (whose 8 lanes add in another order).
// ggml's AMX kernels (ggml-cpu/amx/mmq.cpp) instead take K = 16 per tile product for Q6_K.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "moe/quant/blocks.h"
#include "moe/quant/kernels.h"
#include "moe/quant/kernels_amx_tiles.h"

#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,amx-tile,amx-int8")
// GCC 12's 512-bit intrinsics start from a self-initialised undefined vector (__Y = __Y), which
// -Wmaybe-uninitialized reports wherever they are inlined.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "moe/quant/kernels_groups_x86.h"

namespace ferry::moe::quant::kernels {
namespace {

// Tokens from which the tiles beat the AVX2 kernel: bench_moe_kernels, Q6_K, 2 threads, measured
// the AVX2 kernel 12% faster at 8 tokens on a 151936 x 2048 head (--rows), even on a 2048 x 768
// expert's down projection, the tiles 15% and 1.7x faster at 10 and 12 tokens (head, expert).
constexpr std::size_t kMinTokens = 10;
constexpr int kTile = 16;                             // weight rows (A, C rows) and tokens (B, C columns)
constexpr std::size_t kTileBytes = 16 * 64;           // one A or B tile
constexpr std::size_t kChunks = kQK_K / 64;           // tile products (K = 64) per super-block
constexpr std::size_t kBlockTiles = 2 * kChunks;      // A tiles per super-block: h and l of each chunk
constexpr std::size_t kQsOffset = 4;                  // BlockQ8_K's quants after its f32 scale
constexpr std::size_t kUnpackBlocks = 2;              // super-blocks unpacked at a time (16 KiB of A tiles)

// tmm0, tmm1: A (h, l: 16 rows × 64 bytes); tmm2, tmm3: B (16 × 64 bytes), tmm4..tmm7: C (16 × 16
// int32): even super-blocks in tmm4, 5 and B in tmm2, odd ones in tmm6, 7 and tmm3, so that a
// block's products run while the one before it is stored.
void configure_tiles() {
  TileConfig c;
  for (int t = 0; t < 8; ++t) c.rows[t] = kTile, c.colsb[t] = 64;
  memory_barrier();
  _tile_loadconfig(&c);
}

// Within each 16 weights the order the unpacking leaves them in (packs of the even and the odd
// products): byte p holds weight kOrder[p]. Activations are packed in the same order.
constexpr char kOrder[16] = {0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15};

// Super-blocks [b0, b0 + nb) of 16 rows (`rows` of them real, the rest zero) from w (w_row bytes
// apart) as A tiles: super-block b0 + b's chunk c at u + (kBlockTiles·b + 2c)·kTileBytes (h) and
// the next tile (l), row r at 64·r; the rows' scales d at d[16·b + r].
void unpack_rows(const unsigned char* w, std::size_t w_row, int rows, std::size_t b0, std::size_t nb, unsigned char* u,
                 float* d) {
  const __m512i m4 = _mm512_set1_epi8(0x0F), m3 = _mm512_set1_epi8(3), m63 = _mm512_set1_epi16(63);
  const __m512i k32w = _mm512_set1_epi16(32), k32b = _mm512_set1_epi8(32);
  // Lane i of chunk c: the scale of sub-block 4c + i in the even (e) or odd (o) bytes of each word.
  __m512i pick_e[kChunks], pick_o[kChunks];
  for (std::size_t c = 0; c < kChunks; ++c) {
    alignas(64) char e[64], o[64];
    for (int i = 0; i < 64; ++i) {
      const char j = static_cast<char>(4 * c + i / 16);
      e[i] = i % 2 == 0 ? j : static_cast<char>(0x80);  // 0x80: a zero byte
      o[i] = i % 2 == 1 ? j : static_cast<char>(0x80);
    }
    pick_e[c] = _mm512_load_si512(e);
    pick_o[c] = _mm512_load_si512(o);
  }
  for (int r = 0; r < kTile; ++r) {
    if (r >= rows) {
      for (std::size_t t = 0; t < nb * kBlockTiles; ++t) _mm512_storeu_si512(u + t * kTileBytes + 64 * r, _mm512_setzero_si512());
      for (std::size_t b = 0; b < nb; ++b) d[16 * b + r] = 0;
      continue;
    }
    const unsigned char* blk = w + r * w_row + b0 * sizeof(BlockQ6_K);
    for (std::size_t b = 0; b < nb; ++b, blk += sizeof(BlockQ6_K)) {
      prefetch_ahead<sizeof(BlockQ6_K)>(blk);  // the rows are read in order (not measured to help or hurt here)
      std::uint16_t dh;
      std::memcpy(&dh, blk + offsetof(BlockQ6_K, d), 2);
      d[16 * b + r] = _cvtsh_ss(dh);
      const __m512i sc = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + offsetof(BlockQ6_K, scales))));
      for (int half = 0; half < 2; ++half) {
        // Chunk 2·half: weights 128·half + m from the low nibbles; chunk 2·half + 1: + 64 from the high.
        const __m512i ql = _mm512_loadu_si512(blk + offsetof(BlockQ6_K, ql) + 64 * half);
        const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + offsetof(BlockQ6_K, qh) + 32 * half));
        const __m512i hb = _mm512_inserti64x4(_mm512_castsi256_si512(qh), _mm256_srli_epi16(qh, 2), 1);
        const __m512i q[2] = {
            _mm512_or_si512(_mm512_and_si512(ql, m4), _mm512_slli_epi16(_mm512_and_si512(hb, m3), 4)),
            _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), m4),
                            _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(hb, 4), m3), 4))};
        for (int k = 0; k < 2; ++k) {
          const std::size_t c = 2 * half + k;
          const __m512i sc_e = _mm512_shuffle_epi8(sc, pick_e[c]), sc_o = _mm512_shuffle_epi8(sc, pick_o[c]);
          // s = q·sc − 32·sc + 32 = v + 32 per word (the odd words' sc << 8, shifted back signed).
          const __m512i off = _mm512_sub_epi16(_mm512_srai_epi16(sc_o, 3), k32w);
          const __m512i s_e = _mm512_sub_epi16(_mm512_maddubs_epi16(q[k], sc_e), off);
          const __m512i s_o = _mm512_sub_epi16(_mm512_maddubs_epi16(q[k], sc_o), off);
          // h = s >> 6 (floor), l = (s & 63) − 32: 64·h + l = v.
          const __m512i h = _mm512_packs_epi16(_mm512_srai_epi16(s_e, 6), _mm512_srai_epi16(s_o, 6));
          const __m512i l = _mm512_sub_epi8(
              _mm512_packs_epi16(_mm512_and_si512(s_e, m63), _mm512_and_si512(s_o, m63)), k32b);
          unsigned char* t = u + (kBlockTiles * b + 2 * c) * kTileBytes + 64 * r;
          _mm512_storeu_si512(t, h);
          _mm512_storeu_si512(t + kTileBytes, l);
        }
      }
    }
  }
}

// Tokens [t0, t0 + count) (count ≤ 16) of x as B tiles: super-block b's chunk c at
// p + (kChunks·b + c)·kTileBytes, row i holding 4 bytes of each token (token t at 4t) in kOrder;
// their scales at dx[16·b + t] (zero past count).
void pack_tokens(const unsigned char* x, std::size_t x_row, std::size_t count, std::size_t nb, unsigned char* p,
                 float* dx) {
  alignas(64) char order[64];
  for (int i = 0; i < 64; ++i) order[i] = static_cast<char>(kOrder[i % 16]);
  const __m512i shuffle = _mm512_load_si512(order);
  std::memset(p, 0, nb * kChunks * kTileBytes);
  for (std::size_t b = 0; b < nb; ++b)
    for (int t = 0; t < kTile; ++t) {
      if (static_cast<std::size_t>(t) >= count) {
        dx[16 * b + t] = 0;
        continue;
      }
      const unsigned char* xb = x + t * x_row + b * sizeof(BlockQ8_K);
      std::memcpy(&dx[16 * b + t], xb, sizeof(float));
      for (std::size_t c = 0; c < kChunks; ++c) {
        alignas(64) std::uint32_t v[16];
        _mm512_store_si512(v, _mm512_shuffle_epi8(_mm512_loadu_si512(xb + kQsOffset + 64 * c), shuffle));
        auto* bt = reinterpret_cast<std::uint32_t*>(p + (kChunks * b + c) * kTileBytes);
        for (int i = 0; i < 16; ++i) bt[16 * i + t] = v[i];
      }
    }
}

// acc[r] += dx·d[r]·(64·ch[r] + cl[r]) over the 16 tokens of each row r.
inline void scale_block(const std::int32_t (*ch)[kTile], const std::int32_t (*cl)[kTile], const float* dx,
                        const float* d, float (*acc)[kTile]) {
  const __m512 vdx = _mm512_loadu_ps(dx);
  for (int r = 0; r < kTile; ++r) {
    const __m512i s = _mm512_add_epi32(_mm512_slli_epi32(_mm512_load_si512(ch[r]), 6), _mm512_load_si512(cl[r]));
    _mm512_storeu_ps(acc[r], _mm512_fmadd_ps(_mm512_mul_ps(vdx, _mm512_set1_ps(d[r])), _mm512_cvtepi32_ps(s),
                                             _mm512_loadu_ps(acc[r])));
  }
}

// nb unpacked super-blocks (u, d) times the same super-blocks of one packed token tile (p, dx),
// added to acc[row][token].
void rows_tile(const unsigned char* u, const float* d, std::size_t nb, const unsigned char* p, const float* dx,
               float (*acc)[kTile]) {
  alignas(64) std::int32_t c[2][2][kTile][kTile];  // [block parity][h, l][row][token]
  memory_barrier();  // u and p are written
  // Block b's 4 chunks: A h and l against the same B, summed in C h and l.
#define FERRY_Q6K_BLOCK(bt, ch, cl, b)                                             \
  _tile_zero(ch);                                                                  \
  _tile_zero(cl);                                                                  \
  for (std::size_t k = 0; k < kChunks; ++k) {                                      \
    _tile_loadd(bt, p + (kChunks * (b) + k) * kTileBytes, 64);                     \
    _tile_loadd(0, u + (kBlockTiles * (b) + 2 * k) * kTileBytes, 64);              \
    _tile_dpbssd(ch, 0, bt);                                                       \
    _tile_loadd(1, u + (kBlockTiles * (b) + 2 * k + 1) * kTileBytes, 64);          \
    _tile_dpbssd(cl, 1, bt);                                                       \
  }
  for (std::size_t b = 0; b < nb; b += 2) {
    FERRY_Q6K_BLOCK(2, 4, 5, b);
    if (b > 0) scale_block(c[1][0], c[1][1], dx + 16 * (b - 1), d + 16 * (b - 1), acc);
    _tile_stored(4, c[0][0], 64);
    _tile_stored(5, c[0][1], 64);
    if (b + 1 < nb) {
      FERRY_Q6K_BLOCK(3, 6, 7, b + 1);
      scale_block(c[0][0], c[0][1], dx + 16 * b, d + 16 * b, acc);
      _tile_stored(6, c[1][0], 64);
      _tile_stored(7, c[1][1], 64);
      if (b + 2 >= nb) scale_block(c[1][0], c[1][1], dx + 16 * (b + 1), d + 16 * (b + 1), acc);
    } else {
      scale_block(c[0][0], c[0][1], dx + 16 * b, d + 16 * b, acc);
    }
  }
#undef FERRY_Q6K_BLOCK
}

void q6_k_rows_tiles(const void* w, std::size_t rows, std::size_t n, const std::byte* x, std::size_t x_row,
                     std::size_t tokens, float* y, std::size_t y_stride) {
  const std::size_t w_row = n / kQK_K * sizeof(BlockQ6_K);
  const auto* wb = static_cast<const unsigned char*>(w);
  if (tokens < kMinTokens) {
    const TokensFn row_tokens = avx2_dots().q6_k_tokens;
    for (std::size_t r = 0; r < rows; ++r) row_tokens(wb + r * w_row, n, x, x_row, tokens, y + r, y_stride);
    return;
  }
  const std::size_t nb = n / kQK_K;
  const std::size_t tiles_t = (tokens + kTile - 1) / kTile;
  auto* u = static_cast<unsigned char*>(
      amx_scratch(AmxScratch::kQ6kWeights, kUnpackBlocks * (kBlockTiles * kTileBytes + 16 * sizeof(float))));
  auto* d = reinterpret_cast<float*>(u + kUnpackBlocks * kBlockTiles * kTileBytes);
  auto* acc = static_cast<float(*)[kTile][kTile]>(amx_scratch(AmxScratch::kQ6kSums, tiles_t * sizeof(float[kTile][kTile])));
  const std::size_t packed_tile = nb * kChunks * kTileBytes + nb * 16 * sizeof(float);  // B tiles and scales
  auto* p = static_cast<unsigned char*>(amx_scratch(AmxScratch::kQ6kActivations, tiles_t * packed_tile));
  const auto* xs = reinterpret_cast<const unsigned char*>(x);
  for (std::size_t tt = 0; tt < tiles_t; ++tt)
    pack_tokens(xs + tt * kTile * x_row, x_row, std::min<std::size_t>(kTile, tokens - tt * kTile), nb,
                p + tt * packed_tile, reinterpret_cast<float*>(p + tt * packed_tile + nb * kChunks * kTileBytes));
  configure_tiles();
  for (std::size_t r0 = 0; r0 < rows; r0 += kTile) {
    const int rows_here = static_cast<int>(std::min<std::size_t>(kTile, rows - r0));
    std::memset(acc, 0, tiles_t * sizeof(float[kTile][kTile]));
    // A few super-blocks at a time, so that their A tiles stay in L1 while every token tile passes.
    for (std::size_t b0 = 0; b0 < nb; b0 += kUnpackBlocks) {
      const std::size_t count = std::min(kUnpackBlocks, nb - b0);
      unpack_rows(wb + r0 * w_row, w_row, rows_here, b0, count, u, d);
      for (std::size_t tt = 0; tt < tiles_t; ++tt) {
        const unsigned char* pt = p + tt * packed_tile;
        rows_tile(u, d, count, pt + kChunks * b0 * kTileBytes,
                  reinterpret_cast<const float*>(pt + nb * kChunks * kTileBytes) + 16 * b0, acc[tt]);
      }
    }
    for (std::size_t tt = 0; tt < tiles_t; ++tt)
      for (std::size_t t = 0; t < std::min<std::size_t>(kTile, tokens - tt * kTile); ++t)
        for (int r = 0; r < rows_here; ++r) y[(tt * kTile + t) * y_stride + r0 + r] = acc[tt][r][t];
  }
  _tile_release();
}

}  // namespace

const RowsTable& amx_rows() {
  static const RowsTable table{q6_k_rows_tiles};
  return table;
}

}  // namespace ferry::moe::quant::kernels
