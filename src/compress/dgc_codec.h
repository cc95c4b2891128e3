// Deep Gradient Compression: top-k with momentum correction, clipping and sparsity warm-up.
#pragma once

#include <vector>

#include "compress/codec.h"
#include "compress/codec_spec.h"
#include "compress/topk_select.h"

namespace ferry::compress {

struct DgcOptions {
  double ratio = 0.001;       // final density k/n in (0, 1] (spec key: ratio; 99.9% sparsity)
  double momentum = 0.9;      // m in [0, 1): momentum correction factor (spec key: momentum)
  double clip_norm = 0.0;     // local gradient clipping: max L2 norm of g per step, 0 = off
                              // (spec key: clip; the paper uses the global threshold * N^-1/2)
  std::uint64_t warmup_steps = 0;  // sparsity warm-up length in encode calls, 0 = off
                                   // (spec key: warmup)
};
DgcOptions parse_dgc_options(SpecReader& spec);

// DGC (Lin, Han, Mao, Wang, Dally, "Deep Gradient Compression: Reducing the Communication
// Bandwidth for Distributed Training", ICLR 2018), per tensor and step:
//   g <- g * min(1, clip / ||g||_2)                (local gradient clipping, if clip > 0)
//   u <- m u + g;   v <- v + u                     (momentum correction)
//   send the top-k of |v| as (index, value);  v[sent] <- 0;  u[sent] <- 0
//                                                  (error feedback + momentum factor masking)
// Sparsity warm-up: the first `warmup` steps are split into 4 equal stages of density
// 25%, 6.25%, 1.5625%, 0.390625% (sparsity 75%, 93.75%, 98.4375%, 99.6% as in the paper),
// never below `ratio`; afterwards density = ratio.
// The momentum lives here: train DGC tensors with plain SGD (no optimizer momentum).
// Selection is exact (TopkSelector) instead of the paper's sampled threshold.
// Wire: sparse_payload.h, size 16 + 8k bytes (k varies with the warm-up stage).
class DgcCodec final : public Codec {
 public:
  DgcCodec(DgcOptions options, TensorInfo info);

  std::string name() const override { return "dgc"; }
  void encode(std::span<const float> grad, std::vector<std::byte>& out) override;
  void decode(std::span<const std::byte> payload, std::span<float> out) const override;
  void decode_add(std::span<const std::byte> payload, std::span<float> acc) const override;
  // Upper bound: the densest stage of the schedule.
  std::size_t encoded_size_bytes() const override;
  // The accumulated velocity v (the unsent gradient mass).
  std::span<const float> residual() const override { return velocity_; }
  void save_state(std::vector<std::byte>& out) const override;  // step, momentum, velocity
  void load_state(std::span<const std::byte> state) override;

  // Density used by the encode call number `step` (0-based).
  double density_at(std::uint64_t step) const;
  std::uint64_t step() const { return step_; }

 private:
  DgcOptions options_;
  std::vector<float> momentum_;  // u
  std::vector<float> velocity_;  // v
  std::uint64_t step_ = 0;
  TopkSelector selector_;
  std::vector<std::uint32_t> idx_;
};

}  // namespace ferry::compress
