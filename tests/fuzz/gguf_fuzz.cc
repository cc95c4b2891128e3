// Fuzzes the GGUF reader (moe/quant/gguf_file): a file is either rejected with a FormatError or
// every tensor it lists lies inside the file at an aligned offset, holds whole blocks of its
// type, and overlaps no other tensor. The first and last block of each tensor are dequantized,
// so a span past the end would show up under AddressSanitizer.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz_util.h"
#include "moe/quant/dequantize.h"
#include "moe/quant/gguf_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ferry;
  using namespace ferry::moe::quant;
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  GgufFile f;
  if (!fuzz::parses<FormatError>([&] { f = GgufFile::parse(bytes, "fuzz.gguf"); })) return 0;
  FERRY_FUZZ_ASSERT(f.data_offset() % f.alignment() == 0);
  std::vector<const GgufTensor*> spans;
  for (const auto& t : f.tensors()) {
    FERRY_FUZZ_ASSERT(t.offset >= f.data_offset() && t.offset <= size && t.bytes <= size - t.offset);
    FERRY_FUZZ_ASSERT((t.offset - f.data_offset()) % f.alignment() == 0);
    const auto& traits = quant_traits(t.type);
    FERRY_FUZZ_ASSERT(t.row_length() % traits.block_elems == 0);
    FERRY_FUZZ_ASSERT(t.bytes == t.elements() / traits.block_elems * traits.block_bytes);
    std::vector<float> out(traits.block_elems);
    const auto span = f.data(t);
    dequantize_row(t.type, span.data(), out.data(), out.size());
    dequantize_row(t.type, span.data() + span.size() - traits.block_bytes, out.data(), out.size());
    spans.push_back(&t);
  }
  std::sort(spans.begin(), spans.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
  for (std::size_t i = 1; i < spans.size(); ++i)
    FERRY_FUZZ_ASSERT(spans[i]->offset >= spans[i - 1]->offset + spans[i - 1]->bytes);
  return 0;
}
