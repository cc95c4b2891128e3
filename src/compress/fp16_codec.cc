#include "compress/fp16_codec.h"

#include <algorithm>
#include <cstring>

#include "core/half.h"
#include "compress/wire_format.h"

namespace ferry::compress {
namespace {
constexpr std::size_t kChunk = 1024;  // bounce buffer: payloads may be unaligned
}

std::size_t Fp16Codec::size_bytes(std::size_t numel) { return kHeaderBytes + 2 * numel; }

void Fp16Codec::encode(std::span<const float> grad, std::vector<std::byte>& out) {
  check_numel(grad.size(), "gradient");
  const std::size_t n = grad.size();
  write_header(out, size_bytes(n), {.codec = CodecId::kFp16, .numel = n});
  std::byte* dst = out.data() + kHeaderBytes;
  const float* x = grad.data();
  std::uint16_t tmp[kChunk];
  for (std::size_t i = 0; i < n; i += kChunk) {
    std::size_t m = std::min(kChunk, n - i);
    for (std::size_t j = 0; j < m; ++j) tmp[j] = float_to_half(x[i + j]);
    std::memcpy(dst + 2 * i, tmp, 2 * m);
  }
}

void Fp16Codec::check(std::span<const std::byte> payload) const {
  read_header(payload, CodecId::kFp16, info_.numel);
  check_payload_size(payload, size_bytes(info_.numel), CodecId::kFp16);
}

void Fp16Codec::decode(std::span<const std::byte> payload, std::span<float> out) const {
  check_numel(out.size(), "decode output");
  check(payload);
  const std::byte* src = payload.data() + kHeaderBytes;
  const std::size_t n = out.size();
  std::uint16_t tmp[kChunk];
  for (std::size_t i = 0; i < n; i += kChunk) {
    std::size_t m = std::min(kChunk, n - i);
    std::memcpy(tmp, src + 2 * i, 2 * m);
    for (std::size_t j = 0; j < m; ++j) out[i + j] = half_to_float(tmp[j]);
  }
}

void Fp16Codec::decode_add(std::span<const std::byte> payload, std::span<float> acc) const {
  check_numel(acc.size(), "decode_add accumulator");
  check(payload);
  const std::byte* src = payload.data() + kHeaderBytes;
  const std::size_t n = acc.size();
  std::uint16_t tmp[kChunk];
  for (std::size_t i = 0; i < n; i += kChunk) {
    std::size_t m = std::min(kChunk, n - i);
    std::memcpy(tmp, src + 2 * i, 2 * m);
    for (std::size_t j = 0; j < m; ++j) acc[i + j] += half_to_float(tmp[j]);
  }
}

}  // namespace ferry::compress
