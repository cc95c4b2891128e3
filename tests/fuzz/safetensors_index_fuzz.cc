// Fuzzes the reader of model.safetensors.index.json (moe/model/checkpoint): the text is either
// rejected with a FormatError or every shard it names is a plain file name inside the
// checkpoint directory (never a path that would let the reader map an arbitrary file).
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "moe/model/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ferry;
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::pair<std::string, std::string>> map;
  if (!fuzz::parses<FormatError>([&] { map = moe::parse_safetensors_index(text, "fuzz.index.json"); })) return 0;
  for (const auto& [tensor, shard] : map) {
    FERRY_FUZZ_ASSERT(!shard.empty() && shard != "." && shard != "..");
    FERRY_FUZZ_ASSERT(shard.find('/') == std::string::npos && shard.find('\0') == std::string::npos);
  }
  return 0;
}
