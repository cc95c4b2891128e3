// PowerSGD against a naive double-precision reference, on the PS path and on allreduce with
// threads as workers.
#include <gtest/gtest.h>

#include <barrier>
#include <cmath>
#include <thread>

#include "compress/low_rank.h"
#include "compress/powersgd_codec.h"
#include "compress/wire_format.h"
#include "test_util.h"

namespace ferry::compress {
namespace {

using Mat = std::vector<double>;  // row-major or r vectors, as in low_rank.h

// Naive Gram-Schmidt on r columns of length len.
void ref_orth(Mat& p, std::size_t len, std::size_t r) {
  for (std::size_t c = 0; c < r; ++c) {
    for (std::size_t d = 0; d < c; ++d) {
      double dot = 0;
      for (std::size_t i = 0; i < len; ++i) dot += p[d * len + i] * p[c * len + i];
      for (std::size_t i = 0; i < len; ++i) p[c * len + i] -= dot * p[d * len + i];
    }
    double nrm = 0;
    for (std::size_t i = 0; i < len; ++i) nrm += p[c * len + i] * p[c * len + i];
    nrm = std::sqrt(nrm);
    for (std::size_t i = 0; i < len; ++i) p[c * len + i] = nrm > 0 ? p[c * len + i] / nrm : 0;
  }
}

Mat ref_mq(const Mat& m, std::size_t rows, std::size_t cols, const Mat& q, std::size_t r) {
  Mat p(r * rows, 0.0);
  for (std::size_t c = 0; c < r; ++c)
    for (std::size_t i = 0; i < rows; ++i)
      for (std::size_t j = 0; j < cols; ++j) p[c * rows + i] += m[i * cols + j] * q[c * cols + j];
  return p;
}

Mat ref_mtp(const Mat& m, std::size_t rows, std::size_t cols, const Mat& p, std::size_t r) {
  Mat q(r * cols, 0.0);
  for (std::size_t c = 0; c < r; ++c)
    for (std::size_t i = 0; i < rows; ++i)
      for (std::size_t j = 0; j < cols; ++j) q[c * cols + j] += m[i * cols + j] * p[c * rows + i];
  return q;
}

Mat ref_outer(const Mat& p, const Mat& q, std::size_t rows, std::size_t cols, std::size_t r) {
  Mat out(rows * cols, 0.0);
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j)
      for (std::size_t c = 0; c < r; ++c) out[i * cols + j] += p[c * rows + i] * q[c * cols + j];
  return out;
}

Mat to_double(std::span<const float> v) { return Mat(v.begin(), v.end()); }

TEST(LowRank, KernelsMatchNaive) {
  const std::size_t rows = 13, cols = 37, r = 3;
  const auto m = testing::normal_vector(rows * cols, 1);
  const auto q = testing::normal_vector(r * cols, 2);
  std::vector<float> p(r * rows), q2(r * cols), out(rows * cols);
  low_rank_mq(m.data(), rows, cols, q.data(), r, p.data());
  const Mat pr = ref_mq(to_double(m), rows, cols, to_double(q), r);
  for (std::size_t i = 0; i < p.size(); ++i) ASSERT_NEAR(p[i], pr[i], 1e-4);
  low_rank_mtp(m.data(), rows, cols, p.data(), r, q2.data());
  const Mat qr = ref_mtp(to_double(m), rows, cols, to_double(p), r);
  for (std::size_t i = 0; i < q2.size(); ++i) ASSERT_NEAR(q2[i], qr[i], 1e-3);
  orthonormalize(p.data(), rows, r);
  for (std::size_t a = 0; a < r; ++a)
    for (std::size_t b = 0; b < r; ++b) {
      double dot = 0;
      for (std::size_t i = 0; i < rows; ++i) dot += double(p[a * rows + i]) * p[b * rows + i];
      ASSERT_NEAR(dot, a == b ? 1.0 : 0.0, 1e-5);
    }
}

TEST(Powersgd, ParameterServerPathMatchesReference) {
  const std::size_t rows = 24, cols = 40, r = 3, n = rows * cols;
  PowersgdCodec c({.rank = 3, .seed = 8}, TensorInfo{.numel = n, .shape = {24, 5, 8}, .tensor_id = 2});
  ASSERT_TRUE(c.compresses());
  ASSERT_EQ(c.rows(), rows);
  ASSERT_EQ(c.cols(), cols);
  Mat q = to_double(c.q()), e(n, 0.0);
  std::vector<std::byte> payload;
  std::vector<float> d(n);
  for (int s = 0; s < 6; ++s) {
    const auto g = testing::normal_vector(n, 70 + s);
    c.encode(g, payload);
    ASSERT_EQ(payload.size(), 16 + 8 + 4 * r * (rows + cols));
    EXPECT_EQ(c.encoded_size_bytes(), payload.size());
    Mat m(n);
    for (std::size_t i = 0; i < n; ++i) m[i] = g[i] + e[i];
    Mat p = ref_mq(m, rows, cols, q, r);
    ref_orth(p, rows, r);
    q = ref_mtp(m, rows, cols, p, r);
    const Mat approx = ref_outer(p, q, rows, cols, r);
    for (std::size_t i = 0; i < n; ++i) e[i] = m[i] - approx[i];
    c.decode(payload, d);
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_NEAR(d[i], approx[i], 2e-3) << "step " << s << " i " << i;
      ASSERT_NEAR(c.residual()[i], e[i], 2e-3) << "step " << s << " i " << i;
    }
  }
}

TEST(Powersgd, RankOneMatrixIsRecoveredExactly) {
  const std::size_t rows = 30, cols = 20;
  const auto a = testing::normal_vector(rows, 1), b = testing::normal_vector(cols, 2);
  std::vector<float> m(rows * cols);
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j) m[i * cols + j] = a[i] * b[j];
  PowersgdCodec c({.rank = 1}, TensorInfo{.numel = rows * cols, .shape = {30, 20}});
  std::vector<std::byte> payload;
  std::vector<float> d(m.size());
  c.encode(m, payload);
  c.decode(payload, d);
  for (std::size_t i = 0; i < m.size(); ++i) ASSERT_NEAR(d[i], m[i], 1e-4);
  for (float e : c.residual()) ASSERT_NEAR(e, 0.0f, 1e-4);
}

TEST(Powersgd, SmallAndOneDimensionalTensorsGoRaw) {
  auto check_raw = [](TensorInfo info) {
    PowersgdCodec c({.rank = 4}, info);
    EXPECT_FALSE(c.compresses());
    const auto g = testing::normal_vector(info.numel, 3);
    std::vector<std::byte> payload;
    std::vector<float> d(info.numel);
    c.encode(g, payload);
    EXPECT_EQ(payload.size(), 16 + 4 * info.numel);
    c.decode(payload, d);
    EXPECT_EQ(d, g);
    std::vector<float> inout = g;
    EXPECT_TRUE(c.custom_allreduce(inout, [](std::span<float> x) { for (float& v : x) v *= 3; }, 3));
    for (std::size_t i = 0; i < g.size(); ++i) EXPECT_EQ(inout[i], 3 * g[i]);
  };
  check_raw(TensorInfo{.numel = 1000});                         // 1-D (bias)
  check_raw(TensorInfo{.numel = 64, .shape = {8, 8}});          // 4*(8+8)*2 > 64
  check_raw(TensorInfo{.numel = 1});
  PowersgdCodec big({.rank = 4}, TensorInfo{.numel = 64 * 64, .shape = {64, 64}});
  EXPECT_TRUE(big.compresses());
}

TEST(Powersgd, WarmupSendsRawFirst) {
  PowersgdCodec c({.rank = 1, .warmup_steps = 2}, TensorInfo{.numel = 400, .shape = {20, 20}});
  std::vector<std::byte> p;
  const auto g = testing::normal_vector(400, 1);
  c.encode(g, p);
  EXPECT_EQ(p.size(), 16 + 1600u);
  c.encode(g, p);
  EXPECT_EQ(p.size(), 16 + 1600u);
  c.encode(g, p);
  EXPECT_EQ(p.size(), 16 + 8 + 4 * 40u);
}

// Sums buffers across W threads: every thread calls it with its own buffer.
class ThreadAllreduce {
 public:
  explicit ThreadAllreduce(int world) : bufs_(world), barrier_(world) {}
  void operator()(int rank, std::span<float> data) {
    bufs_[rank] = data;
    barrier_.arrive_and_wait();
    if (rank == 0) {
      sum_.assign(data.size(), 0.0f);
      for (auto& b : bufs_)
        for (std::size_t i = 0; i < b.size(); ++i) sum_[i] += b[i];
    }
    barrier_.arrive_and_wait();
    std::copy(sum_.begin(), sum_.end(), data.begin());
    barrier_.arrive_and_wait();
  }

 private:
  std::vector<std::span<float>> bufs_;
  std::vector<float> sum_;
  std::barrier<> barrier_;
};

TEST(Powersgd, AllreduceMatchesCentralReference) {
  const std::size_t rows = 16, cols = 24, r = 2, n = rows * cols;
  for (int world : {1, 2, 3, 4}) {
    std::vector<std::unique_ptr<PowersgdCodec>> codecs;
    for (int w = 0; w < world; ++w)
      codecs.push_back(std::make_unique<PowersgdCodec>(
          PowersgdOptions{.rank = 2, .seed = 1},
          TensorInfo{.numel = n, .shape = {16, 24}, .tensor_id = 5, .rank = w}));
    Mat q = to_double(codecs[0]->q());
    for (int w = 1; w < world; ++w)
      ASSERT_EQ(to_double(codecs[w]->q()), q) << "initial Q must be equal on all workers";
    std::vector<Mat> e(world, Mat(n, 0.0));
    for (int s = 0; s < 4; ++s) {
      std::vector<std::vector<float>> grads(world), results(world);
      for (int w = 0; w < world; ++w) grads[w] = testing::normal_vector(n, 1000 * s + w);
      ThreadAllreduce allreduce(world);
      std::vector<std::thread> threads;
      for (int w = 0; w < world; ++w)
        threads.emplace_back([&, w] {
          results[w] = grads[w];
          codecs[w]->custom_allreduce(
              results[w], [&, w](std::span<float> x) { allreduce(w, x); }, world);
        });
      for (auto& t : threads) t.join();
      // Reference.
      std::vector<Mat> m(world, Mat(n));
      Mat p(r * rows, 0.0);
      for (int w = 0; w < world; ++w) {
        for (std::size_t i = 0; i < n; ++i) m[w][i] = grads[w][i] + e[w][i];
        const Mat pw = ref_mq(m[w], rows, cols, q, r);
        for (std::size_t i = 0; i < p.size(); ++i) p[i] += pw[i];
      }
      ref_orth(p, rows, r);
      Mat qs(r * cols, 0.0);
      for (int w = 0; w < world; ++w) {
        const Mat qw = ref_mtp(m[w], rows, cols, p, r);
        for (std::size_t i = 0; i < qs.size(); ++i) qs[i] += qw[i];
      }
      const Mat sum = ref_outer(p, qs, rows, cols, r);
      for (int w = 0; w < world; ++w) {
        for (std::size_t i = 0; i < n; ++i) {
          e[w][i] = m[w][i] - sum[i] / world;
          ASSERT_NEAR(results[w][i], sum[i], 3e-3) << "world " << world << " step " << s;
          ASSERT_NEAR(codecs[w]->residual()[i], e[w][i], 3e-3);
        }
        ASSERT_EQ(results[w], results[0]) << "every worker must get the same sum";
      }
      for (std::size_t i = 0; i < qs.size(); ++i) q[i] = qs[i] / world;
    }
  }
}

}  // namespace
}  // namespace ferry::compress
