// Products on quantized blocks (moe/quant/matmul): for every weight format, the portable and the
// AVX2 kernels equal the product of the dequantized weights and the dequantized activations
// (computed here in double) within the float rounding of their block sums, derived below.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "moe/quant/blocks.h"
#include "moe/quant/dequantize.h"
#include "moe/quant/matmul.h"
#include "moe/quant/quantize.h"

namespace ferry::moe::quant {
namespace {

constexpr QuantType kTypes[] = {QuantType::kF32, QuantType::kF16, QuantType::kBF16, QuantType::kQ8_0,
                                QuantType::kQ4_0, QuantType::kQ4_K, QuantType::kQ6_K};

// The activations as the kernels see them, back in float.
std::vector<float> dequantized_activations(QuantType weights, const std::vector<std::byte>& act, std::size_t batch,
                                           std::size_t n) {
  std::vector<float> out(batch * n);
  const std::size_t row = activation_row_bytes(weights, n);
  for (std::size_t b = 0; b < batch; ++b) {
    const std::byte* p = act.data() + b * row;
    switch (activation_format(weights)) {
      case ActivationFormat::kF32: std::memcpy(out.data() + b * n, p, n * 4); break;
      case ActivationFormat::kQ8_0: dequantize_row(QuantType::kQ8_0, p, out.data() + b * n, n); break;
      case ActivationFormat::kQ8_K:
        for (std::size_t i = 0; i < n / kQK_K; ++i) {
          const auto* blk = reinterpret_cast<const BlockQ8_K*>(p) + i;
          for (int j = 0; j < kQK_K; ++j) out[b * n + i * kQK_K + j] = blk->d * blk->qs[j];
        }
        break;
    }
  }
  return out;
}

class QuantMatmul : public ::testing::TestWithParam<bool> {  // parameter: AVX2 kernels
 protected:
  void SetUp() override {
    set_matmul_portable(!GetParam());
    if (GetParam() && !matmul_uses_avx2()) GTEST_SKIP() << "this CPU has no AVX2/FMA/F16C: only the portable kernels run";
  }
  void TearDown() override { set_matmul_portable(false); }
};

// Each output is Σ_blocks of a float product of scales and an exact integer sum (float
// weights: Σ of float products). With u = 2^-24, a block term carries at most 3 roundings and
// the sum over nb terms nb more, so |y − Σ ŵ·x̂| ≤ (nb + 3)·u·Σ |terms| ≤ (nb + 3)·u·S, where
// S = Σ_k |ŵ_k|·|x̂_k| (for Q4_K the scale and min parts count separately: S uses
// |d·sc·q| + |dmin·m| for |ŵ|, an upper bound of the same sum). A factor 2 covers the reassociation
// of the AVX2 kernels (8 partial sums added at the end).
TEST_P(QuantMatmul, EqualsTheDequantizedProduct) {
  const std::size_t rows = 7, n = 512, batch = 3;
  std::mt19937 rng(11);
  std::normal_distribution<float> dist;
  std::vector<float> w(rows * n), x(batch * n);
  for (auto& v : w) v = dist(rng);
  for (auto& v : x) v = dist(rng);
  for (QuantType type : kTypes) {
    std::vector<std::byte> wq(quant_matrix_bytes(type, rows, n));
    quantize_row(type, w.data(), wq.data(), w.size());
    std::vector<float> wd(rows * n), wabs(rows * n);
    dequantize_row(type, wq.data(), wd.data(), wd.size());
    for (std::size_t i = 0; i < wd.size(); ++i) wabs[i] = std::fabs(wd[i]);
    if (type == QuantType::kQ4_K) {  // |d·sc·q| + |dmin·m| ≤ 2·max|ŵ| + 2·|ŵ|, generous and simple
      for (std::size_t r = 0; r < rows; ++r) {
        float m = 0;
        for (std::size_t k = 0; k < n; ++k) m = std::max(m, wabs[r * n + k]);
        for (std::size_t k = 0; k < n; ++k) wabs[r * n + k] = 2 * (m + wabs[r * n + k]);
      }
    }
    std::vector<std::byte> act;
    quantize_activations(type, x.data(), batch, n, act);
    const auto xd = dequantized_activations(type, act, batch, n);
    std::vector<float> y(batch * rows, std::numeric_limits<float>::quiet_NaN());
    matmul_rows(type, wq.data(), n, 0, rows, act.data(), batch, y.data(), rows);
    const std::size_t nb = n / quant_traits(type).block_elems;
    const double u = std::ldexp(1.0, -24);
    for (std::size_t b = 0; b < batch; ++b) {
      for (std::size_t r = 0; r < rows; ++r) {
        double ref = 0, s = 0;
        for (std::size_t k = 0; k < n; ++k) {
          ref += double(wd[r * n + k]) * xd[b * n + k];
          s += double(wabs[r * n + k]) * std::fabs(xd[b * n + k]);
        }
        const double bound = 2 * (std::min<double>(nb, n) + 3) * u * s;
        EXPECT_NEAR(y[b * rows + r], ref, bound) << quant_name(type) << " row " << r << " batch " << b;
      }
    }
  }
}

// A row range writes exactly its rows (threads split a matrix by rows).
TEST_P(QuantMatmul, RowRangeWritesOnlyItsRows) {
  const std::size_t rows = 6, n = 256;
  std::vector<float> w(rows * n, 0.5f), x(n, 1.0f);
  for (QuantType type : {QuantType::kQ4_0, QuantType::kQ6_K, QuantType::kF32}) {
    std::vector<std::byte> wq(quant_matrix_bytes(type, rows, n)), act;
    quantize_row(type, w.data(), wq.data(), w.size());
    quantize_activations(type, x.data(), 1, n, act);
    std::vector<float> y(rows, -1.0f);
    matmul_rows(type, wq.data(), n, 2, 5, act.data(), 1, y.data(), rows);
    for (std::size_t r = 0; r < rows; ++r) {
      if (r >= 2 && r < 5)
        EXPECT_NEAR(y[r], 128.0f, 128.0f * 0.01f) << quant_name(type);  // 256 · 0.5 · 1
      else
        EXPECT_EQ(y[r], -1.0f) << quant_name(type) << " row " << r;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, QuantMatmul, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Avx2" : "Portable"; });

// Q8_K activations: |x − d·q| ≤ d/2 with d = max|x|/127, and bsums are the sums of each 16 q.
TEST(QuantActivations, Q8_KWithinHalfAStepAndSums) {
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  std::vector<float> x(512);
  for (auto& v : x) v = dist(rng);
  std::vector<std::byte> act;
  quantize_activations(QuantType::kQ4_K, x.data(), 1, x.size(), act);
  for (int i = 0; i < 2; ++i) {
    const auto* b = reinterpret_cast<const BlockQ8_K*>(act.data()) + i;
    float amax = 0;
    for (int j = 0; j < kQK_K; ++j) amax = std::max(amax, std::fabs(x[i * kQK_K + j]));
    EXPECT_FLOAT_EQ(b->d, amax / 127);
    for (int j = 0; j < kQK_K; ++j) EXPECT_LE(std::fabs(x[i * kQK_K + j] - b->d * b->qs[j]), b->d / 2 * (1 + 1e-5f));
    for (int g = 0; g < 16; ++g) {
      int sum = 0;
      for (int l = 0; l < 16; ++l) sum += b->qs[16 * g + l];
      EXPECT_EQ(b->bsums[g], sum);
    }
  }
}

}  // namespace
}  // namespace ferry::moe::quant
