// Dense kernels for PowerSGD's rank-r power iteration, written out (no BLAS, no libtorch).
// M is rows x cols, row-major. A factor of rank r is stored as r contiguous vectors
// ("columns"): P is r vectors of length rows, Q is r vectors of length cols.
#pragma once

#include <cstddef>

namespace ferry::compress {

// P_c[i] = sum_j M[i][j] * Q_c[j]                  (P = M Q)
void low_rank_mq(const float* m, std::size_t rows, std::size_t cols, const float* q,
                 std::size_t r, float* p);
// Q_c[j] = sum_i M[i][j] * P_c[i]                  (Q = M^T P)
void low_rank_mtp(const float* m, std::size_t rows, std::size_t cols, const float* p,
                  std::size_t r, float* q);
// out[i][j] = alpha * sum_c P_c[i] Q_c[j]  (overwrite), or out[i][j] += that (accumulate).
void low_rank_outer(float* out, std::size_t rows, std::size_t cols, const float* p,
                    const float* q, std::size_t r, float alpha, bool accumulate);
// Modified Gram-Schmidt: makes the r vectors of length len orthonormal, in order, in place
// (dot products in double). A vector that becomes zero (rank deficiency) is left zero.
void orthonormalize(float* p, std::size_t len, std::size_t r);

}  // namespace ferry::compress
