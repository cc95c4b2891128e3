// Products on quantized blocks (moe/quant/matmul): for every weight format, the portable, AVX2,
// AVX-512 VNNI and AMX kernels equal the product of the dequantized weights and the dequantized
// activations (computed here in double) within the float rounding of their block sums, derived
// below; and the row-group layout (moe/quant/row_groups.h) is the one its header describes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "moe/quant/blocks.h"
#include "moe/quant/dequantize.h"
#include "moe/quant/matmul.h"
#include "moe/quant/quantize.h"
#include "moe/quant/row_groups.h"

namespace ferry::moe::quant {
namespace {

constexpr QuantType kTypes[] = {QuantType::kF32, QuantType::kF16, QuantType::kBF16, QuantType::kQ8_0,
                                QuantType::kQ4_0, QuantType::kQ4_K, QuantType::kQ5_K, QuantType::kQ6_K,
                                QuantType::kMXFP4};

// The activations as the kernels see them, back in float.
std::vector<float> dequantized_activations(QuantType weights, const std::vector<std::byte>& act, std::size_t batch,
                                           std::size_t n) {
  std::vector<float> out(batch * n);
  const std::size_t row = activation_row_bytes(weights, n);
  for (std::size_t b = 0; b < batch; ++b) {
    const std::byte* p = act.data() + b * row;
    switch (activation_format(weights)) {
      case ActivationFormat::kF32: std::memcpy(out.data() + b * n, p, n * 4); break;
      case ActivationFormat::kQ8_0: {
        dequantize_row(QuantType::kQ8_0, p, out.data() + b * n, n);
        // After the blocks, each block's sum of quants (kernels.h).
        for (std::size_t i = 0; i < n / kQK8_0; ++i) {
          std::int32_t sum = 0, stored;
          for (int j = 0; j < kQK8_0; ++j) sum += reinterpret_cast<const BlockQ8_0*>(p)[i].qs[j];
          std::memcpy(&stored, p + quant_row_bytes(QuantType::kQ8_0, n) + 4 * i, 4);
          EXPECT_EQ(stored, sum) << "block " << i;
        }
        break;
      }
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

// The weights of `rows` × n quantized row by row, in the kernels' layout.
std::vector<std::byte> kernel_weights(QuantType type, const std::vector<float>& w, std::size_t rows, std::size_t n) {
  std::vector<std::byte> wq(quant_matrix_bytes(type, rows, n));
  quantize_row(type, w.data(), wq.data(), rows * n);
  to_row_groups(type, wq.data(), rows, n);
  return wq;
}

class QuantMatmul : public ::testing::TestWithParam<Kernels> {
 protected:
  void SetUp() override {
    if (static_cast<int>(GetParam()) > static_cast<int>(best_matmul_kernels()))
      GTEST_SKIP() << "this CPU cannot run the " << kernels_name(GetParam()) << " kernels";
    set_matmul_kernels(GetParam());
  }
  void TearDown() override { set_matmul_kernels(best_matmul_kernels()); }
};

// Each output is Σ_blocks of a float product of scales and an exact integer sum (float
// weights: Σ of float products; MXFP4: the power-of-two scale times the f16 activation scale is
// exact, so its block terms carry fewer roundings than the bound allows). With u = 2^-24, a block term carries at most 3 roundings and
// the sum over nb terms nb more, so |y − Σ ŵ·x̂| ≤ (nb + 3)·u·Σ |terms| ≤ (nb + 3)·u·S, where
// S = Σ_k |ŵ_k|·|x̂_k| (for Q4_K and Q5_K the scale and min parts count separately: S uses
// |d·sc·q| + |dmin·m| for |ŵ|, an upper bound of the same sum). A factor 2 covers the reassociation
// of the AVX2 kernels (8 partial sums added at the end).
TEST_P(QuantMatmul, EqualsTheDequantizedProduct) {
  // 19 rows: two row groups and 3 rows as stored; 6 activation rows: a tile of 4 and one of 2.
  const std::size_t rows = 19, n = 512, batch = 6;
  std::mt19937 rng(11);
  std::normal_distribution<float> dist;
  std::vector<float> w(rows * n), x(batch * n);
  for (auto& v : w) v = dist(rng);
  for (auto& v : x) v = dist(rng);
  for (QuantType type : kTypes) {
    std::vector<std::byte> wq = kernel_weights(type, w, rows, n);
    std::vector<float> wd(rows * n), wabs(rows * n);
    {
      std::vector<std::byte> stored = wq;
      from_row_groups(type, stored.data(), rows, n);
      dequantize_row(type, stored.data(), wd.data(), wd.size());
    }
    for (std::size_t i = 0; i < wd.size(); ++i) wabs[i] = std::fabs(wd[i]);
    if (type == QuantType::kQ4_K || type == QuantType::kQ5_K) {  // |d·sc·q| + |dmin·m| ≤ 2·max|ŵ| + 2·|ŵ|
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
    matmul_rows(type, wq.data(), rows, n, 0, rows, act.data(), batch, y.data(), rows);
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

// A row range writes exactly its rows (threads split a matrix by whole row groups).
TEST_P(QuantMatmul, RowRangeWritesOnlyItsRows) {
  const std::size_t rows = 20, n = 256;  // row groups [0, 8), [8, 16), rows 16..19 as stored
  std::vector<float> w(rows * n, 0.5f), x(n, 1.0f);
  for (QuantType type : {QuantType::kQ4_0, QuantType::kQ8_0, QuantType::kQ4_K, QuantType::kQ5_K, QuantType::kQ6_K,
                         QuantType::kMXFP4, QuantType::kF32}) {
    const std::vector<std::byte> wq = kernel_weights(type, w, rows, n);
    std::vector<std::byte> act;
    quantize_activations(type, x.data(), 1, n, act);
    for (auto [begin, end] : {std::pair<std::size_t, std::size_t>{8, 16}, {16, 18}, {0, 20}}) {
      std::vector<float> y(rows, -1.0f);
      matmul_rows(type, wq.data(), rows, n, begin, end, act.data(), 1, y.data(), rows);
      for (std::size_t r = 0; r < rows; ++r) {
        if (r >= begin && r < end)
          EXPECT_NEAR(y[r], 128.0f, 128.0f * 0.01f) << quant_name(type);  // 256 · 0.5 · 1
        else
          EXPECT_EQ(y[r], -1.0f) << quant_name(type) << " row " << r;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, QuantMatmul,
                         ::testing::Values(Kernels::kPortable, Kernels::kAvx2, Kernels::kAvx512Vnni, Kernels::kAmx),
                         [](const auto& info) { return std::string(kernels_name(info.param)); });

// The row-group layout byte for byte as row_groups.h states it: each part of a block in turn,
// chunk c of row r at chunk·(8c + r) from the part's start; the rows after the last group as
// stored; out of place chunk by chunk the same; and back again.
TEST(RowGroups, LayoutAsDocumentedAndInvertible) {
  struct Part {
    std::size_t offset, bytes, chunk;  // in the stored block
  };
  struct Case {
    QuantType type;
    std::vector<Part> parts;
  };
  for (const Case& k : {Case{QuantType::kQ8_0, {{0, 2, 2}, {2, 32, 4}}}, Case{QuantType::kQ4_0, {{0, 2, 2}, {2, 16, 4}}},
                        Case{QuantType::kMXFP4, {{0, 1, 1}, {1, 16, 4}}},
                        Case{QuantType::kQ4_K, {{0, 2, 2}, {2, 2, 2}, {4, 12, 1}, {16, 128, 4}}}}) {
    const QuantType type = k.type;
    const std::size_t rows = 11, nb = 2, n = nb * quant_traits(type).block_elems;
    const std::size_t block = quant_traits(type).block_bytes, row = nb * block;
    std::vector<std::byte> stored(rows * row);
    for (std::size_t i = 0; i < stored.size(); ++i) stored[i] = static_cast<std::byte>((i * 7 + 3) % 251);
    std::vector<std::byte> g = stored;
    to_row_groups(type, g.data(), rows, n);
    for (std::size_t b = 0; b < nb; ++b)
      for (std::size_t r = 0; r < kRowGroup; ++r) {
        const std::byte* s = stored.data() + r * row + b * block;
        const std::byte* at = g.data() + b * kRowGroup * block;
        for (const Part& p : k.parts) {
          for (std::size_t c = 0; c < p.bytes / p.chunk; ++c)
            EXPECT_EQ(std::memcmp(at + p.chunk * (8 * c + r), s + p.offset + p.chunk * c, p.chunk), 0)
                << quant_name(type) << " part at " << p.offset << " chunk " << c << " row " << r;
          at += kRowGroup * p.bytes;
        }
      }
    EXPECT_EQ(std::memcmp(g.data() + 8 * row, stored.data() + 8 * row, 3 * row), 0) << "rows after the group";
    // Out of place, in chunks of whole groups (as the file link lands them): the same bytes.
    std::vector<std::byte> chunked(stored.size());
    to_row_groups(type, stored.data(), chunked.data(), 8, n);
    to_row_groups(type, stored.data() + 8 * row, chunked.data() + 8 * row, rows - 8, n);
    EXPECT_EQ(chunked, g) << quant_name(type) << " out of place";
    from_row_groups(type, g.data(), rows, n);
    EXPECT_EQ(g, stored) << quant_name(type);
  }
  std::vector<std::byte> k(quant_matrix_bytes(QuantType::kQ6_K, 8, 256), std::byte{5}), k0 = k;
  to_row_groups(QuantType::kQ6_K, k.data(), 8, 256);
  EXPECT_EQ(k, k0) << "formats without row groups stay as stored";
  std::vector<std::byte> copied(k.size());
  to_row_groups(QuantType::kQ6_K, k0.data(), copied.data(), 8, 256);
  EXPECT_EQ(copied, k0) << "formats without row groups copied as stored";
}

}  // namespace
}  // namespace ferry::moe::quant
