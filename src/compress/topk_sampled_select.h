// Exact top-k by magnitude with a sampled threshold: one streaming pass instead of two.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

#include "compress/topk_select.h"

namespace ferry::compress {

struct SampledTopkOptions {
  std::size_t min_numel = std::size_t{1} << 16;  // smaller tensors go straight to TopkSelector
  std::size_t sample_size = 4096;                // elements read (fixed stride) for the estimate
  double max_fraction = 1.0 / 16;                // k / n above this: straight to TopkSelector
  bool allow_avx512 = true;  // false: the portable candidate loop (tests run both; same result)
};

// The same selection as TopkSelector (k largest |x|, ties: lower index first, NaN above
// infinity, indices ascending) and the same result bit for bit, found faster when k << n:
//   1. read a fixed-stride sample of m values of |x| and take its r-th largest as the
//      estimate T_est, with r = ceil(k m / n + 4 sqrt(k m / n) + 2): the sample count above
//      the true k-th largest T is Binomial(m, k/n) for an input in random order, so r exceeds
//      it (T_est <= T) unless that count lands 4 standard deviations above its mean;
//   2. one pass over x (fused with e += g for error feedback) appends every element with
//      |x| >= T_est, in index order, to a candidate list (about 1.7k for k = 1 % of 1 M);
//      with AVX-512 (chosen at run time) a compare mask and vpcompressd per 16 values, without
//      branches;
//   3. exact selection inside the candidates: nth_element gives T, then keys > T and the
//      first (k - #greater) keys == T in index order, as TopkSelector does.
// Every element with |x| >= T is a candidate whenever there are >= k candidates, so the result
// is exact. Fewer than k candidates (the estimate was too high) or more than a cap (too low,
// e.g. many equal values) falls back to TopkSelector on the updated vector: slower, same result.
// The sampled-threshold idea is DGC's (Lin et al., "Deep Gradient Compression", ICLR 2018),
// which however sends the approximate set; here it only narrows an exact selection.
class SampledTopkSelector {
 public:
  explicit SampledTopkSelector(SampledTopkOptions options = {});

  // e += g element-wise, then the k (<= e.size()) largest |e| into idx. Returns true when the
  // sampled path produced the result, false when it fell back to TopkSelector.
  bool add_and_select(std::span<const float> g, std::span<float> e, std::size_t k,
                      std::vector<std::uint32_t>& idx);
  // The same without the update: the k largest |x|.
  bool select(std::span<const float> x, std::size_t k, std::vector<std::uint32_t>& idx);

 private:
  static constexpr std::size_t kBlock = 16;       // elements tested together in pass 2
  static constexpr std::size_t kBlockSlack = 16;  // spare candidate slots for branch-free appends
  template <bool kAdd>
  using Target = std::conditional_t<kAdd, float*, const float*>;  // written only when adding
  template <bool kAdd>
  bool run(const float* g, Target<kAdd> e, std::size_t n, std::size_t k,
           std::vector<std::uint32_t>& idx);
  // TopkSelector over x (already updated).
  void exact(std::span<const float> x, std::size_t k, std::vector<std::uint32_t>& idx);

  SampledTopkOptions options_;
  TopkSelector exact_;
  std::vector<std::uint32_t> sample_;
  std::vector<std::uint32_t> cand_idx_;
  std::vector<std::uint32_t> cand_key_;
  std::vector<std::uint32_t> keys_;
};

}  // namespace ferry::compress
