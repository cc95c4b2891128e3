#include "moe/predict/pca.h"

#include <cmath>

#include <torch/types.h>  // first: torch/linalg.h does not include what it uses
#include <torch/linalg.h>
#include <torch/utils.h>

#include "core/error.h"

namespace ferry::moe {

void Pca::project(const float* x, float* y) const {
  for (int k = 0; k < out_dim; ++k) {
    const float* v = components.data() + static_cast<std::size_t>(k) * in_dim;
    float acc = 0;
    for (int i = 0; i < in_dim; ++i) acc += (x[i] - mean[i]) * v[i];
    y[k] = acc;
  }
}

Pca fit_pca(const std::vector<float>& rows, int n, int dim, int k) {
  FERRY_REQUIRE(n >= 2, "PCA needs at least 2 rows, got ", n);
  FERRY_REQUIRE_IN(k, 1, dim, "[]", "PCA dimensions");
  FERRY_CHECK(rows.size() == static_cast<std::size_t>(n) * dim);
  torch::NoGradGuard ng;
  auto x = torch::from_blob(const_cast<float*>(rows.data()), {n, dim}).to(torch::kFloat64);
  auto mean = x.mean(0);
  auto xc = x - mean;
  auto cov = torch::matmul(xc.t(), xc) / (n - 1);
  auto [evals, evecs] = torch::linalg::eigh(cov, "L");  // ascending
  Pca p;
  p.in_dim = dim;
  p.out_dim = k;
  p.mean.assign(mean.data_ptr<double>(), mean.data_ptr<double>() + dim);
  const double total = std::max(1e-30, evals.sum().item<double>());
  double kept = 0;
  auto ev = evals.contiguous();
  auto vec = evecs.contiguous();
  const double* e = ev.data_ptr<double>();
  const double* V = vec.data_ptr<double>();  // [dim x dim], column j = eigenvector j
  const double floor = 1e-8 * std::max(1e-30, e[dim - 1]);
  for (int j = 0; j < k; ++j) {
    const int col = dim - 1 - j;
    const double lambda = std::max(e[col], floor);
    kept += std::max(0.0, e[col]);
    p.variance.push_back(static_cast<float>(lambda));
    const double s = 1.0 / std::sqrt(lambda);
    for (int i = 0; i < dim; ++i) p.components.push_back(static_cast<float>(V[static_cast<std::size_t>(i) * dim + col] * s));
  }
  p.explained = kept / total;
  return p;
}

}  // namespace ferry::moe
