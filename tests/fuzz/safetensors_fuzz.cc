// Fuzzes the safetensors header parser (moe/model/safetensors): a file is either rejected with a
// FormatError or every tensor it lists lies inside the file, has shape x dtype == its span, and
// no two non-empty tensors overlap. The first and last bytes of each tensor are read and
// converted, so a span past the end would show up under AddressSanitizer.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz_util.h"
#include "moe/model/dtype.h"
#include "moe/model/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ferry;
  const auto* bytes = reinterpret_cast<const std::byte*>(data);
  moe::SafetensorsHeader h;
  if (!fuzz::parses<FormatError>([&] { h = moe::parse_safetensors_header(bytes, size, "fuzz.safetensors"); }))
    return 0;
  FERRY_FUZZ_ASSERT(h.data_offset >= 8 && h.data_offset <= size);
  std::vector<const moe::TensorInfo*> spans;
  for (const auto& t : h.tensors) {
    FERRY_FUZZ_ASSERT(t.begin <= t.end && t.end <= size - h.data_offset);
    std::int64_t numel = 1;
    for (std::int64_t d : t.shape) {
      FERRY_FUZZ_ASSERT(d >= 0);
      FERRY_FUZZ_ASSERT(!__builtin_mul_overflow(numel, d, &numel));
    }
    FERRY_FUZZ_ASSERT(t.numel() == numel);
    FERRY_FUZZ_ASSERT(static_cast<std::uint64_t>(numel) * moe::dtype_size(t.dtype) == t.nbytes());
    if (numel == 0) continue;
    const std::byte* first = bytes + h.data_offset + t.begin;
    const std::size_t esize = moe::dtype_size(t.dtype);
    float out[2];
    moe::convert_to_f32(t.dtype, first, &out[0], 1);
    moe::convert_to_f32(t.dtype, first + (numel - 1) * esize, &out[1], 1);
    spans.push_back(&t);
  }
  std::sort(spans.begin(), spans.end(), [](auto* a, auto* b) { return a->begin < b->begin; });
  for (std::size_t i = 1; i < spans.size(); ++i) FERRY_FUZZ_ASSERT(spans[i]->begin >= spans[i - 1]->end);
  return 0;
}
