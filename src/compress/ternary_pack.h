// 2-bit ternary packing shared by twobit and terngrad, in MXNet's layout (quantize_2bit in
// src/kvstore/gradient_compression-inl.h): 16 values per 32-bit word; value j of a
// word lives in byte j/4 at bits (7-2(j%4), 6-2(j%4)); code 11 = +pos, 10 = neg, 00 = 0.
// Code 01 never appears in a valid payload, nor do non-zero padding codes past numel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "compress/wire_format.h"

namespace ferry::compress {

inline constexpr std::uint8_t kTernaryPos = 3;  // 0b11
inline constexpr std::uint8_t kTernaryNeg = 2;  // 0b10

// Packs 4 codes (bytes c0..c3 of x, little-endian) into one byte c0<<6|c1<<4|c2<<2|c3:
// multiplying by 2^30+2^20+2^10+1 moves c0..c3 into bits 30..24; all other partial
// products land in disjoint bits below 24 and cannot carry.
inline std::uint32_t pack_ternary4(std::uint32_t x) { return (x * 0x40100401u) >> 24; }

// Packs 16 codes into one word (codes past `count` must be 0).
inline std::uint32_t pack_ternary16(const std::uint8_t* codes) {
  std::uint32_t w = 0;
  for (int q = 0; q < 4; ++q) {
    std::uint32_t x;
    std::memcpy(&x, codes + 4 * q, 4);
    w |= pack_ternary4(x) << (8 * q);
  }
  return w;
}

// Number of 32-bit words for n values.
constexpr std::size_t ternary_words(std::size_t n) { return div_ceil(n, 16); }

// Throws FormatError (naming `codec`) if any of the ternary_words(n) words at `words` holds
// code 01 or a non-zero padding code.
void check_ternary_words(const std::byte* words, std::size_t n, CodecId codec);

// out[i] = pos / neg / 0 by code (overwrite), or acc[i] += that. Words must be checked.
void unpack_ternary(const std::byte* words, std::size_t n, float pos, float neg, float* out);
void unpack_ternary_add(const std::byte* words, std::size_t n, float pos, float neg, float* acc);

}  // namespace ferry::compress
