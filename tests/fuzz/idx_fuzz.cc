// Fuzzes the IDX parser (train/data/idx_file): any byte string is either rejected with a
// FormatError or yields dims whose product is exactly the number of data bytes.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz_util.h"
#include "train/data/idx_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ferry;
  const std::vector<std::uint8_t> bytes(data, data + size);
  for (std::uint32_t magic : {train::kIdxImagesMagic, train::kIdxLabelsMagic}) {
    train::IdxArray a;
    if (!fuzz::parses<FormatError>([&] { a = train::parse_idx_bytes(bytes, magic, "fuzz.idx"); })) continue;
    FERRY_FUZZ_ASSERT(a.dims.size() == (magic & 0xFF));
    std::uint64_t count = 1;
    for (std::int64_t d : a.dims) {
      FERRY_FUZZ_ASSERT(d > 0);
      FERRY_FUZZ_ASSERT(!__builtin_mul_overflow(count, static_cast<std::uint64_t>(d), &count));
    }
    FERRY_FUZZ_ASSERT(count == a.data.size());
    FERRY_FUZZ_ASSERT(size == 4 + 4 * a.dims.size() + a.data.size());
  }
  return 0;
}
