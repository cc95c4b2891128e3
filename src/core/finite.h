// Whether a float buffer holds only finite values (no NaN, no Inf).
#pragma once

#include <span>

namespace ferry {

inline bool all_finite(std::span<const float> values) {
  float acc = 0;  // v * 0 is NaN for NaN and Inf, 0 otherwise: one branch-free, vectorisable pass
  for (float v : values) acc += v * 0.0f;
  return acc == 0.0f;
}

}  // namespace ferry
