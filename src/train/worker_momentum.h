// Momentum and weight decay with error-feedback codecs: where the optimizer acts.
//
// Without a codec (or with one that keeps no residual) the optimizer steps on the aggregate, as
// MXNet's server does: v <- m v - lr (mean_i g_i + wd w); w <- w + v. With error feedback that
// interacts badly: a coordinate's residual winds up while the gradient is large and is released
// over many later steps, and the aggregate's momentum multiplies every stale release by up to
// 1/(1 - m) (measured: bench/RESULTS.md, "Codecs in training"). The published fix is to move the
// momentum in front of the compressor, on the worker (momentum correction):
//
//   worker i:   u_i <- m u_i + (g_i + wd w)                 (this worker's velocity)
//               payload_i = C(u_i + e_i);  e_i <- u_i + e_i - decode(payload_i)   (error feedback)
//               [sparsifiers: u_i[sent] <- 0                (momentum factor masking)]
//   aggregate:  w <- w - lr (1/N) sum_i decode(payload_i)   (no momentum, no weight decay)
//
// With a lossless codec sum_i u_i / N follows v/(-lr) exactly, so the trajectory is that of plain
// S-SGD with momentum (tested). Sources, per codec (compress/codec_registry.cc): DGC's momentum
// correction and factor masking (Lin et al., ICLR 2018, Sec. 3.2) for top-k and random-k; the
// worker-momentum error-feedback SGD of Zheng, Huang, Kwok (NeurIPS 2019, dist-EF-SGDM) for the
// quantisers; DGC has it inside; PowerSGD keeps the momentum on the aggregate (Vogels et al.,
// NeurIPS 2019, Algorithm 2). The codec's spec key momentum_at=server restores the aggregate's
// momentum for any codec.
//
// EF21 (ef21=1, on request): error feedback on the velocity releases, with every send, all the
// velocity that piled up since the coordinate was last sent, which for random-k is 1/ratio steps
// of it at once. EF21 instead keeps on both sides an estimate h_i of each worker's
// velocity and sends only its correction (Richtarik, Sokolov, Fatkhullin, "EF21", NeurIPS 2021,
// Algorithm 1; with momentum, EF21-SGDM of Fatkhullin, Tyurin, Richtarik, "Momentum Provably
// Improves Error Feedback!", NeurIPS 2023, Algorithm 1):
//
//   worker i:   u_i <- m u_i + (g_i + wd w)
//               c_i = C(u_i - h_i);  h_i <- h_i + decode(c_i)
//   aggregate:  h <- h + (1/N) sum_i decode(c_i);  w <- w - lr h       (h = mean_i h_i)
//
// so every coordinate moves every step, by the last velocity its worker sent for it. It is the
// existing error feedback fed with the velocity's increments: with e_i = u_i - h_i,
// u_i - h_i = (u_i - u_i') + e_i' for the previous u_i', e_i', which is the codec's C(input +
// residual) with input u_i - u_i'. So the worker hands the codec u_i - u_i', and the aggregate is
// SGD with momentum 1 on the decoded mean (ps::SgdOptions::integrate). EF21-SGDM's
// v <- (1 - eta) v + eta g with step gamma is this with eta = 1 - m, gamma = lr / (1 - m), for a
// codec with C(a x) = a C(x) (the sparsifiers; 2-bit with units=rms). Measured at the user's
// learning rate and momentum it trains worse than classic error feedback, for random-k too
// (bench/RESULTS.md, "EF21 against classic error feedback"): its stale estimate is applied
// every step, where classic error feedback applies it once.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "compress/codec_registry.h"
#include "ps/sgd_optimizer.h"

namespace ferry::train {

// The optimizer of a run split between the workers and the aggregate step.
struct OptimizerSplit {
  ps::SgdOptions aggregate;       // steps on the mean of the decoded gradients (PS: the server's)
  bool on_worker = false;         // the workers keep velocity and weight decay (WorkerMomentum)
  float momentum = 0.0f;          // the workers' m (0 with DGC, whose codec keeps it)
  float weight_decay = 0.0f;      // the workers' wd
  compress::MomentumMaskFn mask;  // momentum factor masking after each encode; empty: none
  bool increments = false;        // EF21: the workers hand on u - u_prev; the aggregate integrates
};

// How `sgd` runs with `codec_spec` (compress::codec_momentum): on_worker when the codec has
// error feedback, its entry moves the momentum to the worker, the spec does not say
// momentum_at=server, and there is momentum or weight decay to move. InvalidArgument naming
// --momentum when a codec with its own momentum (dgc) meets a different non-zero one. EF21 is
// on the worker even without momentum or weight decay (it is EF21 proper then: u = g).
OptimizerSplit split_optimizer(const std::string& codec_spec, const ps::SgdOptions& sgd);

// One worker's velocity over its flat gradient.
class WorkerMomentum {
 public:
  WorkerMomentum(std::size_t numel, const OptimizerSplit& split);
  // u <- m u + (g + wd w), then grad <- u (EF21: grad <- u - u_prev): the buffer that is pushed
  // or allreduced next. `weights` may be empty when wd = 0.
  void apply(std::span<float> grad, std::span<const float> weights);
  // Momentum factor masking: after the codec of elements [offset, offset + length) sent
  // `payload`, zeroes u at the coordinates it sent. No-op without a mask.
  void mask(std::size_t offset, std::size_t length, std::span<const std::byte> payload);
  bool needs_weights() const { return weight_decay_ != 0.0f; }
  std::span<const float> velocity() const { return velocity_; }
  std::span<float> mutable_velocity() { return velocity_; }

 private:
  float momentum_;
  float weight_decay_;
  bool increments_;
  compress::MomentumMaskFn mask_;
  std::vector<float> velocity_;
};

}  // namespace ferry::train
