// Principal component analysis of hidden states: y = ((x - mean) . V_k) / sqrt(lambda_k), the k
// leading eigenvectors of the covariance, whitened so that every kept component has unit
// variance on the fitting rows (a small network trains on them without further scaling).
#pragma once

#include <vector>

namespace ferry::moe {

struct Pca {
  int in_dim = 0;
  int out_dim = 0;
  std::vector<float> mean;        // [in_dim]
  std::vector<float> components;  // [out_dim x in_dim], rows already divided by sqrt(eigenvalue)
  std::vector<float> variance;    // [out_dim] eigenvalues, descending

  void project(const float* x, float* y) const;
  // Share of the total variance the kept components explain (set by fit).
  double explained = 0;
};

// Fits on `rows` row-major [n x dim] (libtorch eigendecomposition of the covariance). Requires
// n >= 2 and 1 <= k <= dim.
Pca fit_pca(const std::vector<float>& rows, int n, int dim, int k);

}  // namespace ferry::moe
