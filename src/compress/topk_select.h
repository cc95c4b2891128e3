// Exact top-k selection by magnitude in O(n), for topk and dgc.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace ferry::compress {

// |x| as an unsigned key that orders like the magnitude (NaN above infinity); < 2^31.
inline std::uint32_t abs_key(float x) { return std::bit_cast<std::uint32_t>(x) & 0x7fffffffu; }

// Selects the k elements of largest |x| (ties: lower index first), indices in ascending order.
//
// Radix select on the bits of |x| (for non-negative IEEE floats, the bit pattern read as an
// unsigned integer orders like the value): pass 1 histograms the 10 bits below the sign (8
// exponent bits, 2 mantissa bits: 1024 bins); a suffix sum gives the bin B holding the k-th
// largest. Pass 2 collects, in index order, every element whose bin is >= B (a few percent
// of the tensor). A second 10-bit histogram inside bin B and nth_element on the keys of the
// resulting sub-bin give the exact threshold key T. Everything above T, and the first
// elements equal to T, are kept. Two streaming passes plus work on a small candidate set,
// instead of a heap (O(n log k)) or nth_element over a copy of the whole tensor.
// NaN magnitudes sort above infinity.
class TopkSelector {
 public:
  // Starts a new selection.
  void reset();
  // Pass 1, fed in order chunk by chunk (lets callers fuse it with e += g).
  void count(std::span<const float> chunk);
  // Pass 2 over the whole vector that was counted; writes k (<= x.size()) indices to idx.
  void select(std::span<const float> x, std::size_t k, std::vector<std::uint32_t>& idx);

 private:
  static constexpr int kBits = 10;
  static constexpr int kShift = 31 - kBits;
  static constexpr std::size_t kBins = std::size_t{1} << kBits;
  static constexpr int kBits2 = 10;  // second level, inside the threshold bin
  static constexpr int kShift2 = kShift - kBits2;
  static constexpr std::size_t kBins2 = std::size_t{1} << kBits2;
  static constexpr int kLanes = 4;  // interleaved sub-histograms break store-to-load chains

  std::array<std::array<std::uint32_t, kBins>, kLanes> hist_{};
  std::size_t counted_ = 0;
  std::vector<std::uint32_t> cand_idx_;
  std::vector<std::uint32_t> cand_key_;
  std::vector<std::uint32_t> tie_keys_;
};

}  // namespace ferry::compress
