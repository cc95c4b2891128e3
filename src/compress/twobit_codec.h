// MXNet 2-bit gradient compression with its built-in residual.
#pragma once

#include <vector>

#include "compress/codec.h"
#include "compress/codec_spec.h"

namespace ferry::compress {

// Encoder loops; all give the same bits. kAuto takes the widest the CPU has.
enum class TwobitKernel { kAuto, kAvx512, kAvx2, kBaseline /* SSE2 on x86-64, else scalar */ };
// Whether this build and CPU can run `kernel` (kAuto and kBaseline: always).
bool twobit_kernel_supported(TwobitKernel kernel);

// What `threshold` is measured in (spec key units): `absolute` (MXNet's t, in the units of the
// gradient handed to the codec; the default, so that specs written for earlier versions mean the
// same), `rms` (t = threshold x the root mean square of what this call quantises, residual plus
// gradient, computed on the worker; the header carries t, so decoders need nothing else) or `mxnet` (MXNet's
// convention: the threshold applies to the batch-SUMMED gradient, while ferry hands the codec the
// batch mean, so t = threshold / B with B = TensorInfo::batch, the per-worker batch).
enum class TwobitUnits { kAbsolute, kRms, kMxnet };

struct TwobitOptions {
  float threshold = 0.5f;  // > 0: values sent are +t, -t or 0 (spec key: threshold)
  TwobitUnits units = TwobitUnits::kAbsolute;
  bool per_row = false;    // units=rms only: one t per row (output channel) of a matrix or conv
                           // weight instead of one per tensor (spec key per=tensor|row)
  TwobitKernel kernel = TwobitKernel::kAuto;  // tests force each loop; not a spec key
};
TwobitOptions parse_twobit_options(SpecReader& spec);

// MXNet's two-bit quantisation ("2bit" gradient compression, MXNet 1.x
// src/kvstore/gradient_compression-inl.h; Seide et al. 2014 for the residual idea),
// exactly:
//   r += g;
//   r >= t  -> send 11 (decodes to +t), r -= t
//   r <= -t -> send 10 (decodes to -t), r += t
//   else    -> send 00 (decodes to 0)
// 16 values per 32-bit word (layout in ternary_pack.h).
// Wire: header (aux = bits of t, numel) + ceil(n/16) words.  Size 16 + 4*ceil(n/16) bytes.
// With per=row (units=rms, a tensor of R = shape[0] rows): header flags 1, aux = R, then R fp32
// thresholds, then the words; row i's values decode to +-t_i. Size 16 + 4R + 4*ceil(n/16).
// With units=rms, t = float(threshold x sqrt(sum (r + g)^2 / n)) (r + g in float as the kernels
// add it, the sum in double), at least the smallest normal float, per encode. With units=mxnet, t = float(double(threshold) / B), fixed
// for the run; encoding without a batch (TensorInfo::batch = 0) is an InvalidArgument.
class TwobitCodec final : public Codec {
 public:
  TwobitCodec(TwobitOptions options, TensorInfo info);

  std::string name() const override { return "twobit"; }
  void encode(std::span<const float> grad, std::vector<std::byte>& out) override;
  void decode(std::span<const std::byte> payload, std::span<float> out) const override;
  void decode_add(std::span<const std::byte> payload, std::span<float> acc) const override;
  std::size_t encoded_size_bytes() const override;
  std::span<const float> residual() const override { return residual_; }
  void save_state(std::vector<std::byte>& out) const override;  // the residual
  void load_state(std::span<const std::byte> state) override;

  static std::size_t size_bytes(std::size_t numel);
  // The t an encode of `grad` sends.
  float threshold_for(std::span<const float> grad) const;

 private:
  // Validates the payload; returns t.
  float check(std::span<const std::byte> payload) const;
  // threshold x the RMS of residual[offset, offset + grad.size()) + grad, at least the smallest
  // normal float (units=rms; one tensor, or one row with per=row).
  float rms_threshold(std::size_t offset, std::span<const float> grad) const;
  // Rows that carry a t of their own (per=row and a shape of >= 2 dimensions), else 1.
  std::size_t threshold_rows() const;
  // per=row: validates the payload; fills one t per row; returns the offset of the words.
  std::size_t check_rows(std::span<const std::byte> payload, std::vector<float>& t) const;
  void encode_rows(std::span<const float> grad, std::vector<std::byte>& out);
  void decode_rows(std::span<const std::byte> payload, std::span<float> out, bool add) const;

  TwobitOptions options_;
  std::vector<float> residual_;
};

}  // namespace ferry::compress
