#include "compress/topk_select.h"

#include <algorithm>
#include <bit>
#include <functional>

#include "core/error.h"

namespace ferry::compress {

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
  FERRY_CHECK_EQ(counted_, n, "topk select: counted vs given elements");
  FERRY_CHECK_LE(k, n, "topk select");
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
  std::size_t in_bin = 0;
  for (int l = 0; l < kLanes; ++l) in_bin += hist_[l][bin];
  const std::size_t total = above + in_bin;
  // Pass 2: candidates (bin >= B) in index order. Few elements qualify (a few percent), so a
  // vectorisable test skips blocks without any; inside a block, branch-free appends (always
  // store, advance on a hit) avoid mispredictions. One slot of slack for the last store.
  cand_idx_.resize(total + 1);
  cand_key_.resize(total + 1);
  std::uint32_t* ci = cand_idx_.data();
  std::uint32_t* ck = cand_key_.data();
  std::size_t c = 0;
  const float* p = x.data();
  const auto min_key_s = static_cast<std::int32_t>(min_key);  // keys < 2^31: signed compare ok
  constexpr std::size_t kBlock = 8;
  auto append = [&](std::size_t i) {
    const std::uint32_t key = abs_key(p[i]);
    ci[c] = static_cast<std::uint32_t>(i);
    ck[c] = key;
    c += key >= min_key;
  };
  std::size_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    int any = 0;
    for (std::size_t j = 0; j < kBlock; ++j)
      any |= static_cast<std::int32_t>(abs_key(p[i + j])) >= min_key_s;
    if (!any) continue;
    for (std::size_t j = 0; j < kBlock; ++j) append(i + j);
  }
  for (; i < n; ++i) append(i);
  FERRY_CHECK_EQ(c, total, "topk select: collected vs counted candidates");
  cand_idx_.resize(total);
  cand_key_.resize(total);
  // Exact threshold T among the keys of bin B: the (k - above)-th largest there. Error
  // feedback piles residuals up just below the threshold, so bin B can hold a large share of
  // the tensor: refine by a second histogram on the next kBits2 bits first, then nth_element
  // on the few keys of the sub-bin.
  std::size_t need = k - above;
  std::array<std::uint32_t, kBins2> sub{};
  for (std::size_t j = 0; j < total; ++j)
    if ((cand_key_[j] >> kShift) == bin) ++sub[(cand_key_[j] >> kShift2) & (kBins2 - 1)];
  std::uint32_t sub_bin = kBins2;
  while (sub_bin > 0) {
    --sub_bin;
    if (sub[sub_bin] >= need) break;
    need -= sub[sub_bin];
  }
  const std::uint32_t prefix = (bin << kBits2) | sub_bin;  // key >> kShift2 of the sub-bin
  tie_keys_.clear();
  for (std::size_t j = 0; j < total; ++j)
    if ((cand_key_[j] >> kShift2) == prefix) tie_keys_.push_back(cand_key_[j]);
  FERRY_CHECK(need >= 1 && need <= tie_keys_.size(), "topk select: bin bookkeeping");
  std::nth_element(tie_keys_.begin(), tie_keys_.begin() + (need - 1), tie_keys_.end(),
                   std::greater<>());
  const std::uint32_t threshold = tie_keys_[need - 1];
  std::size_t greater = 0;
  for (std::uint32_t key : tie_keys_) greater += key > threshold;
  std::size_t ties_left = need - greater;  // keys equal to T to keep, lowest index first
  std::size_t out = 0;
  for (std::size_t j = 0; j < cand_idx_.size(); ++j) {
    const std::uint32_t key = cand_key_[j];
    if (key > threshold || (key == threshold && ties_left > 0)) {
      if (key == threshold) --ties_left;
      idx[out++] = cand_idx_[j];
    }
  }
  FERRY_CHECK_EQ(out, k, "topk select: selected vs wanted");
}

}  // namespace ferry::compress
