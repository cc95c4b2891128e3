// Helpers shared by the compress tests: deterministic random tensors and codec construction.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "compress/codec.h"
#include "compress/codec_registry.h"

namespace ferry::compress::testing {

// Reference top-k by sorting: the k largest |x| (as the bit pattern orders it, NaN above
// infinity; for other values the order of std::fabs), ties by lower index, returned ascending.
inline std::vector<std::uint32_t> reference_topk(const std::vector<float>& x, std::size_t k) {
  const auto key = [](float v) { return std::bit_cast<std::uint32_t>(v) & 0x7fffffffu; };
  std::vector<std::uint32_t> order(x.size());
  std::iota(order.begin(), order.end(), 0u);
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                    [&](std::uint32_t a, std::uint32_t b) {
                      const auto ka = key(x[a]), kb = key(x[b]);
                      return ka != kb ? ka > kb : a < b;
                    });
  order.resize(k);
  std::sort(order.begin(), order.end());
  return order;
}

// n values ~ N(0, sigma^2), fixed seed.
inline std::vector<float> normal_vector(std::size_t n, std::uint32_t seed, float sigma = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

inline TensorInfo info_1d(std::size_t n) { return TensorInfo{.numel = n}; }

inline std::unique_ptr<Codec> codec(const std::string& spec, std::size_t n) {
  return make_codec(spec, info_1d(n));
}

// The sizes the issue asks every codec to handle.
inline const std::vector<std::size_t>& edge_sizes() {
  static const std::vector<std::size_t> sizes = {1, 15, 16, 17, 1000003};
  return sizes;
}

}  // namespace ferry::compress::testing
