// Small, fast, seedable random numbers for stochastic codecs (QSGD, TernGrad, random-k).
// SplitMix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number generators", OOPSLA
// 2014): passes BigCrush, one add and three xor-shift-multiplies per 64 bits, trivially seeded.
#pragma once

#include <cstdint>

namespace ferry::compress {

inline std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed = 0) : state_(seed) {}
  std::uint64_t next() { return mix64(state_ += 0x9e3779b97f4a7c15ull); }
  // Uniform in [0, 1) with 24 random bits (exactly representable as float).
  float uniform() { return static_cast<float>(next() >> 40) * 0x1.0p-24f; }
  // Two independent uniforms in [0, 1) (24 random bits each) from one 64-bit draw.
  void uniform2(float& a, float& b) {
    const std::uint64_t x = next();
    a = static_cast<float>(x >> 40) * 0x1.0p-24f;
    b = static_cast<float>((x >> 8) & 0xffffffu) * 0x1.0p-24f;
  }
  // Uniform integer in [0, bound), bound > 0 (Lemire's multiply-shift; bias < bound / 2^64).
  std::uint64_t below(std::uint64_t bound) {
    return static_cast<std::uint64_t>((static_cast<unsigned __int128>(next()) * bound) >> 64);
  }
  std::uint64_t state() const { return state_; }
  // Continues the stream saved by state() (checkpoints).
  void set_state(std::uint64_t state) { state_ = state; }

 private:
  std::uint64_t state_;
};

// Combines seed parts into one well-mixed seed (order matters).
inline std::uint64_t combine_seed(std::uint64_t a, std::uint64_t b) {
  return mix64(a ^ (mix64(b) + 0x9e3779b97f4a7c15ull + (a << 6) + (a >> 2)));
}

}  // namespace ferry::compress
