// Whether a float buffer holds only finite values (no NaN, no Inf).
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <span>

namespace ferry {

// An IEEE-754 float is NaN or Inf exactly when its exponent bits are all ones, i.e. when
// (~bits & exponent_mask) == 0. The minimum of that over the buffer is an integer reduction,
// which the compiler may reorder and so vectorises; a float sum such as Σ v·0 may not be
// reordered and runs at one add latency per element (fcnet's 10 M gradients: 8.3 ms that way,
// 3.0 ms this way, on this project's 2-core machine).
inline bool all_finite(std::span<const float> values) {
  constexpr std::uint32_t kExponent = 0x7f800000u;
  std::uint32_t lowest = kExponent;
  for (float v : values) lowest = std::min(lowest, ~std::bit_cast<std::uint32_t>(v) & kExponent);
  return lowest != 0;
}

}  // namespace ferry
