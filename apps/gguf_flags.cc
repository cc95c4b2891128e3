#include "apps/gguf_flags.h"

#include <cstdio>
#include <map>
#include <utility>

#include "core/error.h"
#include "core/units.h"

namespace ferry::apps {
namespace {

std::string dims_string(const std::vector<std::uint64_t>& dims) {
  std::string s;
  for (std::size_t d = 0; d < dims.size(); ++d) s += (d ? " x " : "") + std::to_string(dims[d]);
  return s;
}

}  // namespace

moe::quant::LlamaFileType file_type_flag(const std::string& flag, const std::string& text) {
  const auto file_type = moe::quant::parse_llama_file_type(text);
  if (!file_type)
    FERRY_THROW(InvalidArgument, flag, " '", text, "': expected one of ", moe::quant::llama_file_type_names());
  return *file_type;
}

void print_gguf_report(const moe::GgufExportReport& r, const std::string& path, bool pure, bool table) {
  using namespace ferry::moe;
  for (const std::string& note : r.notes) std::printf("note: %s\n", note.c_str());
  std::map<std::string, std::pair<int, std::uint64_t>> by_type;  // type -> (tensors, bytes)
  for (const GgufExportTensor& t : r.tensors) {
    if (table)
      std::printf("%-36s %-7s %-24s %12s\n", t.name.c_str(), quant::quant_name(t.type), dims_string(t.dims).c_str(),
                  format_bytes(static_cast<double>(t.bytes)).c_str());
    auto& [count, bytes] = by_type[quant::quant_name(t.type)];
    ++count;
    bytes += t.bytes;
  }
  std::string mix;
  for (const auto& [type, cb] : by_type)
    mix += (mix.empty() ? "" : ", ") + std::to_string(cb.first) + " " + type + " (" +
           format_bytes(static_cast<double>(cb.second)) + ")";
  std::printf("wrote %s: GGUF %s, %s%s, %zu tensors: %s; %llu metadata keys, %s\n", path.c_str(), r.architecture.c_str(),
              quant::llama_file_type_name(r.file_type), pure ? " (pure)" : "", r.tensors.size(), mix.c_str(),
              static_cast<unsigned long long>(r.metadata_keys), format_bytes(static_cast<double>(r.file_bytes)).c_str());
}

}  // namespace ferry::apps
