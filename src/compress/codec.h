// The Codec interface: one instance per tensor compresses that tensor's gradient into packed
// wire bytes and owns its per-tensor state (residual memory, PowerSGD's Q, DGC momentum).
//
// Data flow in training (see docs/compression.md):
//   parameter server: worker  codec.encode(grad, payload) -> push payload bytes
//                     server  codec.decode_add(payload, sum)   for every worker's payload
//   allreduce:        if (!codec.custom_allreduce(grad, allreduce_sum, world)) {
//                       codec.encode(grad, payload); allgather payloads;
//                       zero sum; codec.decode_add(p, sum) for every gathered payload p }
// Either way the aggregate is the SUM over workers of the decoded gradients; the caller averages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace ferry::compress {

// What a codec knows about the tensor it serves.
struct TensorInfo {
  std::size_t numel = 0;             // number of float elements (> 0)
  std::vector<std::int64_t> shape = {};  // empty = 1-D of numel; product must equal numel
  std::uint64_t tensor_id = 0;       // same on every worker for one tensor: seeds shared state
                                     // (PowerSGD's initial Q must be equal on all workers)
  int rank = 0;                      // this worker: seeds private randomness (QSGD rounding)
  std::int64_t batch = 0;            // per-worker batch the gradient is a mean over (twobit
                                     // units=mxnet); 0 = unknown (decoders need no batch)
  std::size_t param_ndim = 0;        // dimensions of the parameter when this tensor is all of
                                     // one (1: a bias, a norm's scale or shift); 0 = unknown or
                                     // a piece of one. The registry sends 1-D parameters raw
                                     // (the spec key raw_1d, codec_registry.h).
};

// Sums a float buffer element-wise over all workers, in place (the caller's communicator).
using AllreduceSumFn = std::function<void(std::span<float>)>;

class Codec {
 public:
  explicit Codec(TensorInfo info);
  virtual ~Codec() = default;
  Codec(const Codec&) = delete;
  Codec& operator=(const Codec&) = delete;

  // Registry name ("twobit"); an error-feedback wrapper appends "+ef".
  virtual std::string name() const = 0;
  const TensorInfo& info() const { return info_; }

  // Compresses grad (size info().numel) into out (resized; reuse it to avoid reallocation).
  // May update internal state (residual, step counter). Not thread-safe per instance.
  virtual void encode(std::span<const float> grad, std::vector<std::byte>& out) = 0;
  // Overwrites out (size info().numel) with the decoded payload. Bounds-checked: a payload of
  // the wrong codec, length, count or index throws FormatError and leaves out untouched.
  // Const and stateless: a server may decode payloads of many workers concurrently.
  virtual void decode(std::span<const std::byte> payload, std::span<float> out) const = 0;
  // acc += decoded payload; same checks and guarantee as decode.
  virtual void decode_add(std::span<const std::byte> payload, std::span<float> acc) const;
  // Bytes of a payload for this tensor (exact for fixed-size codecs, an upper bound otherwise).
  virtual std::size_t encoded_size_bytes() const = 0;

  // Codecs whose aggregation is not "allgather payloads and sum their decodes" (PowerSGD:
  // allreduce P, orthogonalise, allreduce Q) do it here: grad_inout holds this worker's
  // gradient on entry and the SUM over workers of the compressed gradients on return; state
  // (residual, Q) is updated. Returns false, doing nothing, when the caller should use
  // encode + allgather + decode_add instead (the default).
  virtual bool custom_allreduce(std::span<float> grad_inout, const AllreduceSumFn& allreduce_sum,
                                std::size_t world_size);

  // The error-feedback memory (residual) this codec keeps, empty if none. For tests and logs.
  virtual std::span<const float> residual() const { return {}; }

  // Exact resume (checkpoints): appends this codec's mutable state (residual, random stream
  // position, step counter, PowerSGD's Q, DGC's momentum and velocity) to `out`, in the format
  // of codec_state.h. A codec built from the same spec and TensorInfo that load_state()s it
  // then produces the same payloads bit for bit. Stateless codecs write the header only.
  virtual void save_state(std::vector<std::byte>& out) const;
  // Restores what save_state wrote. FormatError naming the codec when the blob was saved by
  // another codec or tensor size, has another version, is truncated or malformed; the codec is
  // unchanged then.
  virtual void load_state(std::span<const std::byte> state);

  // One error-feedback step, used by ErrorFeedbackCodec (Karimireddy et al. 2019):
  //   residual += grad; out = encode(residual); residual -= decode(out).
  // The default does exactly that with `scratch` for the decode; sparse codecs override it to
  // fuse passes. Codecs with internal state of their own need not support it.
  virtual void encode_with_feedback(std::span<const float> grad, std::span<float> residual,
                                    std::vector<std::byte>& out, std::vector<float>& scratch);

 protected:
  // Throws InvalidArgument unless n == info().numel (a caller bug, named with the codec).
  void check_numel(std::size_t n, const char* what) const;

  TensorInfo info_;
};

}  // namespace ferry::compress
