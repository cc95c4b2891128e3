// IEEE 754 binary16 (and bfloat16) <-> binary32 conversion in software, branch-free so loops vectorise. Shared
// by the fp16 gradient codec and the fp16 checkpoint reader.
// float_to_half rounds to nearest, ties to even, handles subnormals, overflow to infinity and
// keeps NaN a (quiet) NaN. After F. Giesen, "float->half variants" (2016), float_to_half_fast3_rtne
// and half_to_float; checked exhaustively against the compiler's _Float16 in the tests.
#pragma once

#include <bit>
#include <cstdint>

namespace ferry {

inline std::uint16_t float_to_half(float value) {
  std::uint32_t f = std::bit_cast<std::uint32_t>(value);
  const std::uint32_t sign = f & 0x80000000u;
  f ^= sign;
  // |x| >= 65520 (2^16 minus half an ulp) rounds to infinity; NaN stays NaN (quiet).
  const std::uint32_t inf_nan = f > 0x7f800000u ? 0x7e00u : 0x7c00u;
  // Subnormal result (|x| < 2^-14): adding 0.5 aligns the 10 mantissa bits at the bottom,
  // the FPU's round-to-nearest-even does the rounding.
  const float denorm_magic = std::bit_cast<float>(((127u - 15u) + (23u - 10u) + 1u) << 23);
  const std::uint32_t sub =
      std::bit_cast<std::uint32_t>(std::bit_cast<float>(f) + denorm_magic) -
      std::bit_cast<std::uint32_t>(denorm_magic);
  // Normal result: rebias exponent, add 0xfff + (lowest kept bit) for ties-to-even, truncate.
  const std::uint32_t mant_odd = (f >> 13) & 1u;
  const std::uint32_t normal = (f + (static_cast<std::uint32_t>(15 - 127) << 23) + 0xfffu + mant_odd) >> 13;
  std::uint32_t h = f >= (143u << 23) ? inf_nan : (f < (113u << 23) ? sub : normal);
  return static_cast<std::uint16_t>(h | (sign >> 16));
}

inline float half_to_float(std::uint16_t half) {
  const std::uint32_t h = half;
  const std::uint32_t shifted_exp = 0x7c00u << 13;
  std::uint32_t o = (h & 0x7fffu) << 13;
  const std::uint32_t exp = shifted_exp & o;
  o += (127u - 15u) << 23;
  // Inf/NaN: push the exponent to 255.
  const std::uint32_t infnan = o + ((128u - 16u) << 23);
  // Zero/subnormal: renormalise through a float subtraction.
  const std::uint32_t sub = std::bit_cast<std::uint32_t>(
      std::bit_cast<float>(o + (1u << 23)) - std::bit_cast<float>(113u << 23));
  o = exp == shifted_exp ? infnan : (exp == 0 ? sub : o);
  return std::bit_cast<float>(o | ((h & 0x8000u) << 16));
}

// bfloat16: the top 16 bits of a binary32. float_to_bf16 rounds to nearest, ties to even, and
// keeps NaN a quiet NaN (as PyTorch and ggml do).
inline std::uint16_t float_to_bf16(float value) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);
  return static_cast<std::uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

inline float bf16_to_float(std::uint16_t bf16) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bf16) << 16);
}

}  // namespace ferry
