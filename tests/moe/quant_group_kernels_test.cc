// Q4_K's row-group kernels of every instruction set (moe/quant/matmul.h: AVX2, AVX-512 VNNI, AMX)
// against the portable kernel, at every token count from 1 to two 16-token AMX tiles and a
// remainder, on row counts that end in an odd row group and rows as stored, for several row
// lengths; and the AMX kernel bit for bit as the VNNI kernel, whose float operations it repeats.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "core/half.h"
#include "moe/quant/blocks.h"
#include "moe/quant/matmul.h"
#include "moe/quant/quantize.h"
#include "moe/quant/row_groups.h"

namespace ferry::moe::quant {
namespace {

// 43 rows: five row groups (two pairs of groups and an odd one for the AMX tiles) and 3 rows as
// stored; 1..37 tokens: up to two 16-token tiles and a remainder of 5.
constexpr std::size_t kRows = 5 * kRowGroup + 3, kMaxTokens = 37;

struct Case {
  std::vector<std::byte> stored, kernel;  // the weights row by row, and in the kernels' layout
  std::vector<std::byte> act;             // kMaxTokens rows of Q8_K activations
};

Case make_case(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist;
  std::vector<float> w(kRows * n), x(kMaxTokens * n);
  for (auto& v : w) v = dist(rng);
  for (auto& v : x) v = dist(rng);
  Case c;
  c.stored.resize(quant_matrix_bytes(QuantType::kQ4_K, kRows, n));
  quantize_row(QuantType::kQ4_K, w.data(), c.stored.data(), kRows * n);
  c.kernel = c.stored;
  to_row_groups(QuantType::kQ4_K, c.kernel.data(), kRows, n);
  quantize_activations(QuantType::kQ4_K, x.data(), kMaxTokens, n, c.act);
  return c;
}

// S = Σ_blocks |d_x|·(|d|·Σ_j sc_j·|S_j| + |dmin|·Σ_j m_j·|bsum_j|) of one row and one token: the
// sum of the magnitudes of the terms both kernels add (S_j = Σ q·x over sub-block j, exact).
double term_magnitudes(const Case& c, std::size_t n, std::size_t row, std::size_t token) {
  const auto* w = reinterpret_cast<const BlockQ4_K*>(c.stored.data()) + row * (n / kQK_K);
  const auto* x = reinterpret_cast<const BlockQ8_K*>(c.act.data() + token * activation_row_bytes(QuantType::kQ4_K, n));
  double s = 0;
  for (std::size_t b = 0; b < n / kQK_K; ++b) {
    double part = 0;
    for (int j = 0; j < 8; ++j) {
      std::uint8_t sc, m;
      q4_k_scale_min(j, w[b].scales, sc, m);
      std::int64_t sj = 0;
      for (int k = 0; k < 32; ++k) {
        const int l = 32 * j + k;  // weight l: byte 32·(l/64) + l%32, low nibble for the first 32 of each 64
        const int q = (w[b].qs[32 * (l / 64) + l % 32] >> (l % 64 < 32 ? 0 : 4)) & 15;
        sj += q * x[b].qs[l];
      }
      part += std::fabs(half_to_float(w[b].d)) * sc * std::fabs(static_cast<double>(sj)) +
              std::fabs(half_to_float(w[b].dmin)) * m * std::abs(x[b].bsums[2 * j] + x[b].bsums[2 * j + 1]);
    }
    s += std::fabs(x[b].d) * part;
  }
  return s;
}

std::vector<float> product(Kernels k, const Case& c, std::size_t n, std::size_t tokens, std::size_t row_begin) {
  set_matmul_kernels(k);
  std::vector<float> y(tokens * kRows, -1.0f);
  matmul_rows(QuantType::kQ4_K, c.kernel.data(), kRows, n, row_begin, kRows, c.act.data(), tokens, y.data(), kRows);
  set_matmul_kernels(best_matmul_kernels());
  return y;
}

class GroupKernels : public ::testing::TestWithParam<Kernels> {
 protected:
  void SetUp() override {
    if (static_cast<int>(GetParam()) > static_cast<int>(best_matmul_kernels()))
      GTEST_SKIP() << "this CPU cannot run the " << kernels_name(GetParam()) << " kernels";
  }
};

// The integer sums of both kernels are exact; the float operations on them differ in order. Per
// block the portable kernel rounds 5 times (the two sums to float, d·Σ, dmin·Σ, their difference,
// d_x·) and the vector kernels 11 times at most (8 fused multiply-adds over the sub-blocks, dmin·Σ,
// the fused d·Σ − ·, the fused d_x·(·) + acc); the sum over nb blocks adds nb roundings. Each is
// then within γ_(nb+11)·S ≈ (nb + 11)·u·S of the exact value (u = 2^-24, S as above), so the two
// within twice that.
TEST_P(GroupKernels, Q4KEqualsThePortableKernel) {
  for (std::size_t n : {256, 768, 2048}) {
    const Case c = make_case(n, static_cast<unsigned>(n));
    const double u = std::ldexp(1.0, -24), nb = static_cast<double>(n / kQK_K);
    for (std::size_t tokens = 1; tokens <= kMaxTokens; ++tokens) {
      const std::vector<float> got = product(GetParam(), c, n, tokens, 0);
      const std::vector<float> want = product(Kernels::kPortable, c, n, tokens, 0);
      for (std::size_t t = 0; t < tokens; ++t)
        for (std::size_t r = 0; r < kRows; ++r) {
          const double bound = 2 * (nb + 11) * u * term_magnitudes(c, n, r, t);
          ASSERT_NEAR(got[t * kRows + r], want[t * kRows + r], bound)
              << "n " << n << ", " << tokens << " tokens: token " << t << " row " << r;
        }
    }
  }
}

// A row's result does not depend on the row range it is computed in (threads split a matrix by
// row groups, so the AMX kernel sees a group paired with either neighbour or alone).
TEST_P(GroupKernels, RowsIndependentOfTheRowRange) {
  const std::size_t n = 512;
  const Case c = make_case(n, 5);
  for (std::size_t tokens : {3, 16, 21}) {
    const std::vector<float> all = product(GetParam(), c, n, tokens, 0);
    const std::vector<float> from_second = product(GetParam(), c, n, tokens, kRowGroup);
    for (std::size_t t = 0; t < tokens; ++t)
      for (std::size_t r = kRowGroup; r < kRows; ++r)
        ASSERT_EQ(from_second[t * kRows + r], all[t * kRows + r]) << tokens << " tokens: token " << t << " row " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, GroupKernels, ::testing::Values(Kernels::kAvx2, Kernels::kAvx512Vnni, Kernels::kAmx),
                         [](const auto& info) { return std::string(kernels_name(info.param)); });

// The AMX kernel repeats the VNNI kernel's float operations in its order (kernels_amx.cc): its
// results are the same floats, so switching between them at a token count changes no output.
TEST(GroupKernelsAmx, Q4KBitForBitTheVnniKernel) {
  if (best_matmul_kernels() != Kernels::kAmx) GTEST_SKIP() << "this CPU or OS cannot run the amx kernels";
  for (std::size_t n : {256, 2048}) {
    const Case c = make_case(n, 7);
    for (std::size_t tokens = 1; tokens <= kMaxTokens; ++tokens) {
      const std::vector<float> amx = product(Kernels::kAmx, c, n, tokens, 0);
      const std::vector<float> vnni = product(Kernels::kAvx512Vnni, c, n, tokens, 0);
      for (std::size_t i = 0; i < amx.size(); ++i)
        ASSERT_EQ(amx[i], vnni[i]) << "n " << n << ", " << tokens << " tokens: token " << i / kRows << " row "
                                   << i % kRows;
    }
  }
}

}  // namespace
}  // namespace ferry::moe::quant
