#include "compress/none_codec.h"

#include <algorithm>
#include <cstring>

#include "compress/wire_format.h"

namespace ferry::compress {

std::size_t NoneCodec::size_bytes(std::size_t numel) { return kHeaderBytes + 4 * numel; }

void NoneCodec::encode(std::span<const float> grad, std::vector<std::byte>& out) {
  check_numel(grad.size(), "gradient");
  write_header(out, size_bytes(grad.size()), {.codec = CodecId::kNone, .numel = grad.size()});
  std::memcpy(out.data() + kHeaderBytes, grad.data(), grad.size_bytes());
}

void NoneCodec::decode(std::span<const std::byte> payload, std::span<float> out) const {
  check_numel(out.size(), "decode output");
  read_header(payload, CodecId::kNone, info_.numel);
  check_payload_size(payload, size_bytes(info_.numel), CodecId::kNone);
  std::memcpy(out.data(), payload.data() + kHeaderBytes, out.size_bytes());
}

void NoneCodec::decode_add(std::span<const std::byte> payload, std::span<float> acc) const {
  check_numel(acc.size(), "decode_add accumulator");
  read_header(payload, CodecId::kNone, info_.numel);
  check_payload_size(payload, size_bytes(info_.numel), CodecId::kNone);
  const std::byte* src = payload.data() + kHeaderBytes;
  float* a = acc.data();
  const std::size_t n = acc.size();
  constexpr std::size_t kChunk = 1024;  // bounce through an aligned buffer: payload may be unaligned
  float tmp[kChunk];
  for (std::size_t i = 0; i < n; i += kChunk) {
    std::size_t m = std::min(kChunk, n - i);
    std::memcpy(tmp, src + 4 * i, 4 * m);
    for (std::size_t j = 0; j < m; ++j) a[i + j] += tmp[j];
  }
}

bool NoneCodec::custom_allreduce(std::span<float> grad_inout, const AllreduceSumFn& allreduce_sum,
                                 std::size_t) {
  check_numel(grad_inout.size(), "gradient");
  allreduce_sum(grad_inout);
  return true;
}

}  // namespace ferry::compress
