#include "compress/low_rank.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace ferry::compress {
namespace {

constexpr std::size_t kLanes = 8;   // independent partial sums: lets the compiler vectorise
constexpr std::size_t kMaxRank = 8; // ranks above are processed in groups of this size

// acc_c += dot(a, b_c) for c < nr over len elements.
void dots(const float* a, const float* const* b, std::size_t nr, std::size_t len, float* out) {
  float acc[kMaxRank][kLanes] = {};
  std::size_t j = 0;
  for (; j + kLanes <= len; j += kLanes)
    for (std::size_t c = 0; c < nr; ++c)
      for (std::size_t l = 0; l < kLanes; ++l) acc[c][l] += a[j + l] * b[c][j + l];
  for (std::size_t c = 0; c < nr; ++c) {
    float s = 0;
    for (std::size_t l = 0; l < kLanes; ++l) s += acc[c][l];
    for (std::size_t t = j; t < len; ++t) s += a[t] * b[c][t];
    out[c] = s;
  }
}

inline void axpy(float* y, float alpha, const float* x, std::size_t len) {
  for (std::size_t j = 0; j < len; ++j) y[j] += alpha * x[j];
}

}  // namespace

void low_rank_mq(const float* m, std::size_t rows, std::size_t cols, const float* q,
                 std::size_t r, float* p) {
  for (std::size_t c0 = 0; c0 < r; c0 += kMaxRank) {
    const std::size_t nr = std::min(kMaxRank, r - c0);
    const float* qs[kMaxRank];
    for (std::size_t c = 0; c < nr; ++c) qs[c] = q + (c0 + c) * cols;
    for (std::size_t i = 0; i < rows; ++i) {
      float out[kMaxRank];
      dots(m + i * cols, qs, nr, cols, out);
      for (std::size_t c = 0; c < nr; ++c) p[(c0 + c) * rows + i] = out[c];
    }
  }
}

void low_rank_mtp(const float* m, std::size_t rows, std::size_t cols, const float* p,
                  std::size_t r, float* q) {
  std::fill(q, q + r * cols, 0.0f);
  for (std::size_t i = 0; i < rows; ++i) {
    const float* row = m + i * cols;
    for (std::size_t c = 0; c < r; ++c) axpy(q + c * cols, p[c * rows + i], row, cols);
  }
}

void low_rank_outer(float* out, std::size_t rows, std::size_t cols, const float* p,
                    const float* q, std::size_t r, float alpha, bool accumulate) {
  for (std::size_t i = 0; i < rows; ++i) {
    float* row = out + i * cols;
    if (!accumulate) std::memset(row, 0, cols * sizeof(float));
    for (std::size_t c = 0; c < r; ++c) axpy(row, alpha * p[c * rows + i], q + c * cols, cols);
  }
}

void orthonormalize(float* p, std::size_t len, std::size_t r) {
  for (std::size_t c = 0; c < r; ++c) {
    float* v = p + c * len;
    for (std::size_t d = 0; d < c; ++d) {
      const float* u = p + d * len;
      double dot = 0;
      for (std::size_t i = 0; i < len; ++i) dot += static_cast<double>(u[i]) * v[i];
      const float f = static_cast<float>(dot);
      for (std::size_t i = 0; i < len; ++i) v[i] -= f * u[i];
    }
    double sq = 0;
    for (std::size_t i = 0; i < len; ++i) sq += static_cast<double>(v[i]) * v[i];
    const double norm = std::sqrt(sq);
    if (norm > 0 && std::isfinite(norm)) {
      const float inv = static_cast<float>(1.0 / norm);
      for (std::size_t i = 0; i < len; ++i) v[i] *= inv;
    } else {
      std::fill(v, v + len, 0.0f);
    }
  }
}

}  // namespace ferry::compress
