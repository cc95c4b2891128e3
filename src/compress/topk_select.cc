#include "compress/topk_select.h"

#include <algorithm>
#include <bit>
#include <functional>

#include "core/error.h"

namespace ferry::compress {
namespace {
inline std::uint32_t abs_key(float x) { return std::bit_cast<std::uint32_t>(x) & 0x7fffffffu; }
}  // namespace

void TopkSelector::reset() {
  for (auto& h : hist_) h.fill(0);
  counted_ = 0;
}

void TopkSelector::count(std::span<const float> chunk) {
  const float* x = chunk.data();
  const std::size_t n = chunk.size();
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) ++hist_[l][abs_key(x[i + l]) >> kShift];
  for (; i < n; ++i) ++hist_[0][abs_key(x[i]) >> kShift];
  counted_ += n;
}

void TopkSelector::select(std::span<const float> x, std::size_t k,
                          std::vector<std::uint32_t>& idx) {
  const std::size_t n = x.size();
  FERRY_CHECK(counted_ == n, "topk select: counted ", counted_, " elements, given ", n);
  FERRY_CHECK(k <= n, "topk select: k ", k, " > n ", n);
  idx.resize(k);
  if (k == n) {
    for (std::size_t i = 0; i < n; ++i) idx[i] = static_cast<std::uint32_t>(i);
    return;
  }
  if (k == 0) return;
  // Bin B holding the k-th largest: count(bin > B) < k <= count(bin >= B).
  std::size_t above = 0;
  std::uint32_t bin = kBins;
  while (bin > 0) {
    --bin;
    std::size_t c = 0;
    for (int l = 0; l < kLanes; ++l) c += hist_[l][bin];
    if (above + c >= k) break;
    above += c;
  }
  const std::uint32_t min_key = bin << kShift;  // every key >= this has bin >= B
  // Pass 2: candidates (bin >= B) in index order.
  cand_idx_.clear();
  cand_key_.clear();
  const float* p = x.data();
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t key = abs_key(p[i]);
    if (key >= min_key) {
      cand_idx_.push_back(static_cast<std::uint32_t>(i));
      cand_key_.push_back(key);
    }
  }
  // Exact threshold T among the keys of bin B: the (k - above)-th largest there.
  const std::size_t need = k - above;
  tie_keys_.clear();
  for (std::uint32_t key : cand_key_)
    if ((key >> kShift) == bin) tie_keys_.push_back(key);
  FERRY_CHECK(need >= 1 && need <= tie_keys_.size(), "topk select: bin bookkeeping");
  std::nth_element(tie_keys_.begin(), tie_keys_.begin() + (need - 1), tie_keys_.end(),
                   std::greater<>());
  const std::uint32_t threshold = tie_keys_[need - 1];
  std::size_t greater = 0;
  for (std::uint32_t key : tie_keys_) greater += key > threshold;
  std::size_t ties_left = need - greater;
  std::size_t out = 0;
  for (std::size_t j = 0; j < cand_idx_.size(); ++j) {
    const std::uint32_t key = cand_key_[j];
    if (key > threshold || (key == threshold && ties_left > 0)) {
      if (key == threshold) --ties_left;
      idx[out++] = cand_idx_[j];
    }
  }
  FERRY_CHECK(out == k, "topk select: selected ", out, " of ", k);
}

}  // namespace ferry::compress
