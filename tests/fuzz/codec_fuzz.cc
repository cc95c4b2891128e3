// Fuzzes one codec's decoder (compress/); built once per codec with FERRY_FUZZ_CODEC set to its
// spec ("twobit", "topk:ratio=0.1", ...). The Codec contract under test: decode and decode_add
// either succeed or throw FormatError leaving the output untouched; decode_add adds exactly
// what decode writes. The tensor size is taken from the payload header (bytes 8..15) when it is
// small, so mutations explore decoding rather than only the size check.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "compress/codec_registry.h"
#include "compress/wire_format.h"
#include "fuzz_util.h"

#ifndef FERRY_FUZZ_CODEC
#error "define FERRY_FUZZ_CODEC to the codec spec under test"
#endif

namespace {

bool same(float a, float b) { return a == b || (std::isnan(a) && std::isnan(b)); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ferry;
  using namespace ferry::compress;
  const std::span<const std::byte> payload(reinterpret_cast<const std::byte*>(data), size);
  std::uint64_t claimed = size >= kHeaderBytes ? load_le<std::uint64_t>(payload.data() + 8) : 0;
  const std::size_t n = claimed >= 1 && claimed <= 4096 ? claimed : 42;
  TensorInfo info{.numel = n};
  // PowerSGD compresses matrices only: give it a 2-D shape whenever the size allows one.
  if (n % 6 == 0) info.shape = {static_cast<std::int64_t>(n / 6), 6};
  static const CodecRegistry& registry = builtin_codec_registry();
  auto codec = registry.make(FERRY_FUZZ_CODEC, info);

  constexpr float kSentinel = 3.5f;
  std::vector<float> out(n, kSentinel);
  const bool decoded = fuzz::parses<FormatError>([&] { codec->decode(payload, out); });
  if (!decoded)
    for (float v : out) FERRY_FUZZ_ASSERT(v == kSentinel);

  std::vector<float> acc(n, 0.0f);
  const bool added = fuzz::parses<FormatError>([&] { codec->decode_add(payload, acc); });
  FERRY_FUZZ_ASSERT(added == decoded);
  for (std::size_t i = 0; i < n; ++i) FERRY_FUZZ_ASSERT(added ? same(acc[i], 0.0f + out[i]) : acc[i] == 0.0f);
  return 0;
}
