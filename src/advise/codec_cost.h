// What a gradient codec costs one worker per iteration, measured by a calibration
// micro-benchmark on the model's own tensors: payload bytes on the wire (per key on the
// parameter server, per tensor through the allreduce's allgather, or the floats a codec with
// its own allreduce scheme sums, as PowerSGD's P and Q), encode seconds and decode-add seconds
// of one worker's payload. The gradient is Gaussian with the models' per-element scale (1e-3),
// so that thresholded and sparse codecs send what they send in training.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ferry::advise {

struct CodecCost {
  std::string spec = "none";      // canonical codec spec
  bool compressed = false;        // false: "none", strategies send raw fp32 (no headers)
  bool custom_allreduce = false;  // allreduce: the codec sums its own factors for some tensors
  double push_bytes = 0;          // payload bytes of one worker's whole-model push
  double allgather_bytes = 0;     // allreduce: payload bytes each worker allgathers
  double ring_bytes = 0;          // allreduce: fp32 bytes ring-allreduced (uncompressed, or a
                                  // custom scheme's factors)
  double encode_s = 0;            // one worker's encode of the whole model, one core (with the
                                  // momentum factor masking after it, where the spec masks)
  double decode_s = 0;            // decode-add of one worker's payload for the whole model
  double custom_allreduce_s = 0;  // custom_allreduce: its own compute (factorisation), one worker
  // The worker's velocity pass over its whole gradient before the encode, when the spec puts the
  // optimizer's momentum on the worker (train/worker_momentum.h, --momentum 0.9); 0 otherwise.
  double momentum_s = 0;
  // Allreduce: the encode and decode-add of the tensors that go through the allgather only (the
  // others run their own scheme, timed in custom_allreduce_s).
  double allgather_encode_s = 0;
  double allgather_decode_s = 0;
  // Allreduce: the separate ring allreduces one worker's exchange makes (a custom scheme's P and
  // Q of each tensor, every raw 1-D tensor its own), each paying its 2(n-1) messages.
  double ring_calls = 0;
};

struct CodecBenchOptions {
  int repetitions = 3;  // timed encodes per tensor (the fastest is kept), after one untimed
  double gradient_scale = 1e-3;  // standard deviation of the synthetic gradient
};

// The codec "none": fp32 bytes, no time. `numels` are the model's tensors.
CodecCost uncompressed_cost(const std::vector<std::size_t>& numels);
// Measures `spec` (any compress::codec_registry spec; InvalidArgument for a bad one) on
// tensors of `numels` with `shapes` (empty or 1-D entries: flat), as the strategies' codecs
// see them (gradient_codecs.h: a tensor of two or more dimensions keeps its shape).
CodecCost measure_codec_cost(const std::string& spec, const std::vector<std::size_t>& numels,
                             const std::vector<std::vector<std::int64_t>>& shapes, const CodecBenchOptions& options = {});

}  // namespace ferry::advise
