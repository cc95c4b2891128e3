#include "compress/topk_sampled_select.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "core/error.h"

namespace ferry::compress {
namespace {
// Pass 2 over whole blocks of 16 from `begin` to `end`: x[i] = e[i] (+ g[i] when g is given,
// written back to e_w), append (i, key) for key >= est at ci/ck[c...]. Returns where it
// stopped: `end`, or just past the first block after which c > cap (16 slots of slack).
struct CollectArgs {
  const float* g;     // nullptr: no update
  float* e_w;         // the residual, written when g != nullptr
  const float* e_r;   // the same memory, read
  std::int32_t est;
  std::uint32_t* ci;
  std::uint32_t* ck;
  std::size_t cap;
};

std::size_t collect_portable(const CollectArgs& a, std::size_t begin, std::size_t end,
                             std::size_t& c_io) {
  std::size_t c = c_io;
  std::size_t i = begin;
  for (; i + 16 <= end;) {
    std::uint32_t key[16];
    if (a.g != nullptr) {
      float* __restrict p = a.e_w + i;
      const float* __restrict q = a.g + i;
      for (int j = 0; j < 16; ++j) {
        const float v = p[j] + q[j];
        p[j] = v;
        key[j] = abs_key(v);
      }
    } else {
      for (int j = 0; j < 16; ++j) key[j] = abs_key(a.e_r[i + j]);
    }
    int any = 0;
    for (int j = 0; j < 16; ++j) any |= static_cast<std::int32_t>(key[j]) >= a.est;
    if (any) {
      for (int j = 0; j < 16; ++j) {  // branch-free appends: always store, advance on a hit
        a.ci[c] = static_cast<std::uint32_t>(i + j);
        a.ck[c] = key[j];
        c += static_cast<std::int32_t>(key[j]) >= a.est;
      }
    }
    i += 16;
    if (c > a.cap) break;
  }
  c_io = c;
  return i;
}

#if defined(__x86_64__) && defined(__GNUC__)
#define FERRY_TOPK_X86_DISPATCH 1
// AVX-512: one compare per 16 keys gives the hit mask; hits are packed with vpcompressd into
// a register and stored whole (the memory form of vpcompressd is slow on some cores).
__attribute__((target("avx512f,popcnt"))) std::size_t collect_avx512(
    const CollectArgs& a, std::size_t begin, std::size_t end, std::size_t& c_io) {
  // Locals, not a.*: the stores below could alias the struct as far as the compiler knows.
  const float* g = a.g;
  float* e_w = a.e_w;
  const float* e_r = a.e_r;
  std::uint32_t* ci = a.ci;
  std::uint32_t* ck = a.ck;
  const std::size_t cap = a.cap;
  std::size_t c = c_io;
  std::size_t i = begin;
  const __m512i absmask = _mm512_set1_epi32(0x7fffffff);
  const __m512i estv = _mm512_set1_epi32(a.est);
  const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const bool add = g != nullptr;
  for (; i + 16 <= end;) {
    __m512 v = _mm512_loadu_ps(e_r + i);
    if (add) {
      v = _mm512_add_ps(v, _mm512_loadu_ps(g + i));
      _mm512_storeu_ps(e_w + i, v);
    }
    const __m512i key = _mm512_and_si512(_mm512_castps_si512(v), absmask);
    const __mmask16 m = _mm512_cmpge_epi32_mask(key, estv);  // keys < 2^31: signed is fine
    // No branch on m: about one block in five has a hit, in no predictable pattern, and a
    // mispredicted branch costs more than the two compresses and stores.
    const __m512i iv = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(i)), iota);
    _mm512_storeu_si512(ci + c, _mm512_maskz_compress_epi32(m, iv));
    _mm512_storeu_si512(ck + c, _mm512_maskz_compress_epi32(m, key));
    c += static_cast<std::size_t>(__builtin_popcount(m));
    i += 16;
    if (c > cap) break;
  }
  c_io = c;
  return i;
}

bool cpu_has_avx512f() {
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("popcnt");
  return has;
}
#endif

std::size_t collect_blocks(const CollectArgs& a, std::size_t begin, std::size_t end,
                           std::size_t& c, bool allow_avx512) {
#if defined(FERRY_TOPK_X86_DISPATCH)
  if (allow_avx512 && cpu_has_avx512f()) return collect_avx512(a, begin, end, c);
#else
  (void)allow_avx512;
#endif
  return collect_portable(a, begin, end, c);
}
}  // namespace

SampledTopkSelector::SampledTopkSelector(SampledTopkOptions options) : options_(options) {
  FERRY_CHECK(options_.sample_size > 0, "sampled top-k: sample_size must be greater than 0");
}

bool SampledTopkSelector::add_and_select(std::span<const float> g, std::span<float> e,
                                         std::size_t k, std::vector<std::uint32_t>& idx) {
  FERRY_CHECK_EQ(g.size(), e.size(), "sampled top-k: gradient vs residual elements");
  return run<true>(g.data(), e.data(), e.size(), k, idx);
}

bool SampledTopkSelector::select(std::span<const float> x, std::size_t k,
                                 std::vector<std::uint32_t>& idx) {
  return run<false>(nullptr, x.data(), x.size(), k, idx);
}

void SampledTopkSelector::exact(std::span<const float> x, std::size_t k,
                                std::vector<std::uint32_t>& idx) {
  exact_.reset();
  exact_.count(x);
  exact_.select(x, k, idx);
}

template <bool kAdd>
bool SampledTopkSelector::run(const float* g, Target<kAdd> e, std::size_t n, std::size_t k,
                              std::vector<std::uint32_t>& idx) {
  FERRY_CHECK_LE(k, n, "sampled top-k");
  const bool sampled = k > 0 && n >= options_.min_numel &&
                       static_cast<double>(k) <= options_.max_fraction * static_cast<double>(n);
  if (!sampled) {
    if constexpr (kAdd)
      for (std::size_t i = 0; i < n; ++i) e[i] += g[i];
    exact({e, n}, k, idx);
    return false;
  }
  // 1. Estimate: the r-th largest key of a fixed-stride sample (of the updated values).
  const std::size_t m = std::min(options_.sample_size, n);
  const std::size_t stride = n / m;
  sample_.resize(m);
  for (std::size_t j = 0, i = stride / 2; j < m; ++j, i += stride) {
    float v = e[i];
    if constexpr (kAdd) v += g[i];
    sample_[j] = abs_key(v);
  }
  const double ks = static_cast<double>(k) * static_cast<double>(m) / static_cast<double>(n);
  const auto r_est = static_cast<std::size_t>(std::ceil(ks + 4.0 * std::sqrt(ks) + 2.0));
  const std::size_t r = std::min(m, r_est);
  std::nth_element(sample_.begin(), sample_.begin() + (r - 1), sample_.end(), std::greater<>());
  const auto est = static_cast<std::int32_t>(sample_[r - 1]);  // keys < 2^31: signed compare ok
  // 2. One pass: update, and append every key >= est in index order. About n r / m qualify;
  // beyond twice that (plus slack) the estimate was poor: stop collecting and fall back.
  const std::size_t cap =
      std::min(n, 2 * static_cast<std::size_t>(static_cast<double>(n) * r / m) + 1024);
  cand_idx_.resize(cap + kBlockSlack);
  cand_key_.resize(cap + kBlockSlack);
  std::uint32_t* ci = cand_idx_.data();
  std::uint32_t* ck = cand_key_.data();
  std::size_t c = 0;
  const std::size_t full = n - n % kBlock;
  std::size_t i;
  if constexpr (kAdd) {
    i = collect_blocks({g, e, e, est, ci, ck, cap}, 0, full, c, options_.allow_avx512);
  } else {
    i = collect_blocks({nullptr, nullptr, e, est, ci, ck, cap}, 0, full, c,
                       options_.allow_avx512);
  }
  const bool overflow = c > cap;
  if (overflow) {
    if constexpr (kAdd)
      for (; i < n; ++i) e[i] += g[i];
    exact({e, n}, k, idx);
    return false;
  }
  for (; i < n; ++i) {
    if constexpr (kAdd) e[i] += g[i];
    const std::uint32_t key = abs_key(e[i]);
    ci[c] = static_cast<std::uint32_t>(i);
    ck[c] = key;
    c += static_cast<std::int32_t>(key) >= est;
  }
  if (c < k || c > cap) {
    exact({e, n}, k, idx);
    return false;
  }
  // 3. Exact selection among the candidates (they hold every key >= T since c >= k).
  keys_.assign(ck, ck + c);
  std::nth_element(keys_.begin(), keys_.begin() + (k - 1), keys_.end(), std::greater<>());
  const std::uint32_t threshold = keys_[k - 1];
  std::size_t greater = 0;
  for (std::size_t j = 0; j < c; ++j) greater += ck[j] > threshold;
  std::size_t ties_left = k - greater;  // keys equal to T to keep, lowest index first
  idx.resize(k);
  std::size_t out = 0;
  for (std::size_t j = 0; j < c; ++j) {
    const std::uint32_t key = ck[j];
    if (key > threshold || (key == threshold && ties_left > 0)) {
      if (key == threshold) --ties_left;
      idx[out++] = ci[j];
    }
  }
  FERRY_CHECK_EQ(out, k, "sampled top-k: selected vs wanted");
  return true;
}

}  // namespace ferry::compress
