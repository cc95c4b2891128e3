// The identity codec: raw fp32 values behind the common header. Baseline and fallback.
#pragma once

#include "compress/codec.h"
#include "compress/codec_spec.h"

namespace ferry::compress {

// No compression: payload = x. Wire: header + n little-endian fp32. Size 16 + 4n bytes.
// On allreduce it is a plain allreduce of the gradient (custom_allreduce), cheaper than
// gathering every worker's full tensor.
class NoneCodec final : public Codec {
 public:
  explicit NoneCodec(TensorInfo info) : Codec(std::move(info)) {}

  std::string name() const override { return "none"; }
  void encode(std::span<const float> grad, std::vector<std::byte>& out) override;
  void decode(std::span<const std::byte> payload, std::span<float> out) const override;
  void decode_add(std::span<const std::byte> payload, std::span<float> acc) const override;
  std::size_t encoded_size_bytes() const override { return size_bytes(info_.numel); }
  bool custom_allreduce(std::span<float> grad_inout, const AllreduceSumFn& allreduce_sum,
                        std::size_t world_size) override;

  static std::size_t size_bytes(std::size_t numel);
};

}  // namespace ferry::compress
