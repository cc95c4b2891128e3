// PowerSGD: rank-r compression by one step of warm-started power iteration, error feedback.
#pragma once

#include <vector>

#include "compress/codec.h"
#include "compress/codec_spec.h"

namespace ferry::compress {

struct PowersgdOptions {
  std::uint32_t rank = 4;             // r >= 1 (spec key: rank); clamped to min(rows, cols)
  double min_compression_rate = 2.0;  // compress only if rows*cols >= rate * r*(rows+cols),
                                      // else send raw (spec key: min_rate; PyTorch's default)
  std::uint64_t warmup_steps = 0;     // first steps sent raw, without residual (spec: warmup;
                                      // PyTorch's start_powerSGD_iter)
  std::uint64_t seed = 0;             // with tensor_id seeds the initial Q, equal on all workers
};
PowersgdOptions parse_powersgd_options(SpecReader& spec);

// PowerSGD (Vogels, Karimireddy, Jaggi, "PowerSGD: Practical Low-Rank Gradient Compression for
// Distributed Optimization", NeurIPS 2019, Algorithms 1 and 2). The tensor is viewed as a
// matrix M of rows = shape[0] by cols = numel/rows; with residual e and warm-started Q (cols x r,
// initially i.i.d. N(0,1) from the shared seed):
//   M = g + e;   P = M Q;   P^ = orthonormalise(P);   Q = M^T P^;   approx = P^ Q^T;   e = M - approx
// On allreduce (custom_allreduce) P and Q are summed across workers between those steps:
//   P = allreduce(M Q);  P^ = orth(P);  Q = allreduce(M^T P^);  result = P^ Q^T (the sum);
//   e = M - result / W;  Q <- Q / W  (same Q on every worker, as in PyTorch's powerSGD_hook).
// On the parameter-server path encode sends P^ and Q of the local M; the server decodes P^ Q^T.
// 1-D tensors (biases), tensors where the factors would not save min_rate x, and warm-up steps
// are sent raw (identity, no residual).
// Wire: header (flags 0 = raw, 1 = low rank; aux = r; numel), then
//   raw:      n fp32                                   size 16 + 4n
//   low rank: u32 rows, u32 cols, P^ (r x rows fp32), Q (r x cols fp32)
//                                                      size 16 + 8 + 4r(rows + cols)
class PowersgdCodec final : public Codec {
 public:
  PowersgdCodec(PowersgdOptions options, TensorInfo info);

  std::string name() const override { return "powersgd"; }
  void encode(std::span<const float> grad, std::vector<std::byte>& out) override;
  void decode(std::span<const std::byte> payload, std::span<float> out) const override;
  void decode_add(std::span<const std::byte> payload, std::span<float> acc) const override;
  // Upper bound: the raw size while warm-up is configured, else the size of this tensor's mode.
  std::size_t encoded_size_bytes() const override;
  bool custom_allreduce(std::span<float> grad_inout, const AllreduceSumFn& allreduce_sum,
                        std::size_t world_size) override;
  std::span<const float> residual() const override { return residual_; }
  void save_state(std::vector<std::byte>& out) const override;  // step, residual, Q
  void load_state(std::span<const std::byte> state) override;

  bool compresses() const { return compressed_; }  // false: this tensor always goes raw
  std::size_t rows() const { return rows_; }
  std::size_t cols() const { return cols_; }
  std::size_t rank() const { return rank_; }
  std::span<const float> q() const { return q_; }

  static std::size_t raw_size_bytes(std::size_t numel);
  static std::size_t low_rank_size_bytes(std::size_t rows, std::size_t cols, std::size_t r);

 private:
  bool send_raw() const { return !compressed_ || step_ < options_.warmup_steps; }
  template <bool kAdd>
  void decode_into(std::span<const std::byte> payload, std::span<float> out) const;

  PowersgdOptions options_;
  std::size_t rows_ = 0, cols_ = 0, rank_ = 0;
  bool compressed_ = false;
  std::uint64_t step_ = 0;
  std::vector<float> residual_;  // e; empty when the tensor is always raw
  std::vector<float> q_;         // r x cols
  std::vector<float> p_;         // r x rows, scratch
};

}  // namespace ferry::compress
