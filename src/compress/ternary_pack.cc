#include "compress/ternary_pack.h"

#include <array>
#include <cstring>

#include "core/error.h"

namespace ferry::compress {
namespace {

// Value of code c in 2 bits.
inline float code_value(unsigned c, float pos, float neg) {
  return c == kTernaryPos ? pos : (c == kTernaryNeg ? neg : 0.0f);
}

// 256 bytes -> 4 floats each: a byte holds values in bit pairs (7,6) (5,4) (3,2) (1,0).
std::array<std::array<float, 4>, 256> byte_table(float pos, float neg) {
  std::array<std::array<float, 4>, 256> t{};
  for (unsigned b = 0; b < 256; ++b)
    for (unsigned k = 0; k < 4; ++k) t[b][k] = code_value((b >> (6 - 2 * k)) & 3u, pos, neg);
  return t;
}

}  // namespace

void check_ternary_words(const std::byte* words, std::size_t n, CodecId codec) {
  const std::size_t nw = ternary_words(n);
  std::uint32_t bad = 0;
  for (std::size_t w = 0; w < nw; ++w) {
    std::uint32_t x = load_le<std::uint32_t>(words + 4 * w);
    // A code's low bit sits at an even position, its high bit just above: 01 = low & ~high.
    bad |= x & ~(x >> 1) & 0x55555555u;
  }
  if (bad != 0)
    FERRY_THROW(FormatError, codec_id_name(codec), " payload: invalid 2-bit code 01");
  const std::size_t tail = n % 16;
  if (tail != 0) {
    std::uint32_t last = load_le<std::uint32_t>(words + 4 * (nw - 1));
    std::uint32_t used = 0;
    for (std::size_t j = 0; j < tail; ++j) used |= 3u << (8 * (j / 4) + 6 - 2 * (j % 4));
    if ((last & ~used) != 0)
      FERRY_THROW(FormatError, codec_id_name(codec), " payload: non-zero padding after element ",
                  n);
  }
}

void unpack_ternary(const std::byte* words, std::size_t n, float pos, float neg, float* out) {
  const auto table = byte_table(pos, neg);
  const std::size_t full_bytes = n / 4;
  const auto* bytes = reinterpret_cast<const std::uint8_t*>(words);
  for (std::size_t b = 0; b < full_bytes; ++b) std::memcpy(out + 4 * b, table[bytes[b]].data(), 16);
  for (std::size_t i = 4 * full_bytes; i < n; ++i) out[i] = table[bytes[i / 4]][i % 4];
}

void unpack_ternary_add(const std::byte* words, std::size_t n, float pos, float neg,
                        float* acc) {
  const auto table = byte_table(pos, neg);
  const std::size_t full_bytes = n / 4;
  const auto* bytes = reinterpret_cast<const std::uint8_t*>(words);
  for (std::size_t b = 0; b < full_bytes; ++b) {
    const float* v = table[bytes[b]].data();
    float* a = acc + 4 * b;
    a[0] += v[0];
    a[1] += v[1];
    a[2] += v[2];
    a[3] += v[3];
  }
  for (std::size_t i = 4 * full_bytes; i < n; ++i) acc[i] += table[bytes[i / 4]][i % 4];
}

}  // namespace ferry::compress
