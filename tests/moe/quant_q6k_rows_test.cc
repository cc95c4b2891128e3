// Q6_K's products for several tokens (moe/quant/matmul.h: the AMX tiles from a few tokens on, the
// AVX2 kernel below that and on CPUs or OSes without AMX) against the dequantized weights times
// the dequantized activations summed in double: at token counts that take every path (one token,
// below and at the tiles' threshold, one tile and a remainder, two tiles and a remainder, more
// tokens than one activation chunk), on row counts that are not a multiple of the 16-row tile; and
// the AMX results independent of the rows and tokens that share their tiles.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "moe/quant/blocks.h"
#include "moe/quant/dequantize.h"
#include "moe/quant/matmul.h"
#include "moe/quant/quantize.h"

namespace ferry::moe::quant::q6k_rows_test {
namespace {

// 37 rows: two 16-row tiles and 5 rows; up to 53 tokens (at n = 4096 an activation chunk is 48).
constexpr std::size_t kRows = 37, kMaxTokens = 53;

struct Case {
  std::size_t n;
  std::vector<std::byte> w, act;  // Q6_K rows as stored (its kernel layout), Q8_K activations
  std::vector<double> wd, xd;     // both dequantized
};

Case make_case(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist;
  std::vector<float> w(kRows * n), x(kMaxTokens * n);
  std::generate(w.begin(), w.end(), [&] { return dist(rng); });
  std::generate(x.begin(), x.end(), [&] { return dist(rng); });
  Case c{n, std::vector<std::byte>(quant_matrix_bytes(QuantType::kQ6_K, kRows, n)), {}, {}, {}};
  quantize_row(QuantType::kQ6_K, w.data(), c.w.data(), kRows * n);
  quantize_activations(QuantType::kQ6_K, x.data(), kMaxTokens, n, c.act);
  dequantize_row(QuantType::kQ6_K, c.w.data(), w.data(), kRows * n);
  c.wd.assign(w.begin(), w.end());
  for (std::size_t t = 0; t < kMaxTokens; ++t) {
    const auto* blocks = reinterpret_cast<const BlockQ8_K*>(c.act.data() + t * activation_row_bytes(QuantType::kQ6_K, n));
    for (std::size_t k = 0; k < n; ++k) c.xd.push_back(double(blocks[k / kQK_K].d) * blocks[k / kQK_K].qs[k % kQK_K]);
  }
  return c;
}

// Rows [row_begin, kRows) times tokens [token_begin, token_begin + tokens) with the kernels in use.
std::vector<float> product(const Case& c, std::size_t tokens, std::size_t row_begin, std::size_t token_begin = 0) {
  std::vector<float> y(tokens * kRows, -1.0f);
  const std::size_t x_row = activation_row_bytes(QuantType::kQ6_K, c.n);
  matmul_rows(QuantType::kQ6_K, c.w.data(), kRows, c.n, row_begin, kRows, c.act.data() + token_begin * x_row, tokens,
              y.data(), kRows);
  return y;
}

// Each kernel sums per super-block the exact integer Σ sc·(q − 32)·q_x and then in float rounds at
// most 3 times per block (d_x·d, the sum to float, the fused multiply-add into the accumulator),
// adds the nb blocks (the AVX2 kernel in 8 lanes, then 3 additions across them; the portable one
// in its order), so it is within (nb + 6)·u·S of the exact value, S = Σ_k |ŵ_k|·|x̂_k| (u = 2^-24).
// The dequantized weights d·sc·(q − 32) carry 2 roundings of their own: within (nb + 8)·u·S of
// the double sum. Every kernel set this CPU runs (AMX's absence: the AVX-512 VNNI set, which
// best_matmul_kernels() then picks).
TEST(Q6kRows, EqualsTheDequantizedProduct) {
  const double u = std::ldexp(1.0, -24);
  std::vector<Case> cases;
  for (std::size_t n : {256, 768, 4096}) cases.push_back(make_case(n, static_cast<unsigned>(n)));
  struct Restore {
    ~Restore() { set_matmul_kernels(best_matmul_kernels()); }
  } restore;
  for (Kernels kernels : {Kernels::kPortable, Kernels::kAvx2, Kernels::kAvx512Vnni, Kernels::kAmx}) {
    if (static_cast<int>(kernels) > static_cast<int>(best_matmul_kernels())) continue;
    set_matmul_kernels(kernels);
    for (const Case& c : cases) {
      const std::size_t n = c.n;
      const double nb = static_cast<double>(n / kQK_K);
      for (std::size_t tokens : {1, 2, 3, 9, 10, 11, 16, 21, 37, 53}) {
        const std::vector<float> got = product(c, tokens, 0);
        for (std::size_t t = 0; t < tokens; ++t)
          for (std::size_t r = 0; r < kRows; ++r) {
            double ref = 0, s = 0;
            for (std::size_t k = 0; k < n; ++k) {
              ref += c.wd[r * n + k] * c.xd[t * n + k];
              s += std::fabs(c.wd[r * n + k] * c.xd[t * n + k]);
            }
            ASSERT_NEAR(got[t * kRows + r], ref, (nb + 8) * u * s)
                << kernels_name(kernels) << ": n " << n << ", " << tokens << " tokens: token " << t << " row " << r;
          }
      }
    }
  }
}

// The AMX kernel's float operations on an output depend only on its row and token, so the result
// is the same bits whichever rows share its tile (threads split a matrix at any row) and whichever
// tokens (a batch, a chunk of it, or the last partial tile).
TEST(Q6kRowsAmx, IndependentOfTheRowsAndTokensSharingATile) {
  if (best_matmul_kernels() != Kernels::kAmx) GTEST_SKIP() << "this CPU or OS cannot run the amx kernels";
  const Case c = make_case(768, 3);
  const std::vector<float> all = product(c, kMaxTokens, 0);
  for (std::size_t row_begin : {1, 5, 16, 30}) {
    const std::vector<float> part = product(c, 21, row_begin, 7);
    for (std::size_t t = 0; t < 21; ++t)
      for (std::size_t r = row_begin; r < kRows; ++r)
        ASSERT_EQ(part[t * kRows + r], all[(t + 7) * kRows + r])
            << "rows from " << row_begin << ": token " << t << " row " << r;
  }
}

}  // namespace
}  // namespace ferry::moe::quant::q6k_rows_test
