// `ferry moe quantize`: a Hugging Face checkpoint to the GGUF file llama.cpp's converter and
// llama-quantize write (moe/model/gguf_export.h), with a table of what was written.
#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "apps/moe_subcommands.h"
#include "core/error.h"
#include "core/units.h"
#include "moe/model/gguf_export.h"
#include "moe/quant/quant_mix.h"

namespace ferry::apps {
namespace {

using namespace ferry::moe;

struct QuantizeFlags {
  std::string model, out, type = "F32", name;
  bool pure = false;
  int threads = 0;
};

std::string dims_string(const std::vector<std::uint64_t>& dims) {
  std::string s;
  for (std::size_t d = 0; d < dims.size(); ++d) s += (d ? " x " : "") + std::to_string(dims[d]);
  return s;
}

int run_quantize(const QuantizeFlags& f) {
  const auto file_type = quant::parse_llama_file_type(f.type);
  if (!file_type)
    FERRY_THROW(InvalidArgument, "--type '", f.type, "': expected one of ", quant::llama_file_type_names());
  FERRY_REQUIRE(f.threads >= 0, "--threads ", f.threads, ": expected 0 (one per core) or more");
  GgufExportOptions o;
  o.file_type = *file_type;
  o.pure = f.pure;
  o.threads = f.threads;
  o.name = f.name;
  const GgufExportReport r = export_gguf(f.model, f.out, o);

  for (const std::string& note : r.notes) std::printf("note: %s\n", note.c_str());
  std::map<std::string, std::pair<int, std::uint64_t>> by_type;  // type -> (tensors, bytes)
  for (const GgufExportTensor& t : r.tensors) {
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
  std::printf("wrote %s: GGUF %s, %s%s, %zu tensors: %s; %llu metadata keys, %s\n", f.out.c_str(), r.architecture.c_str(),
              quant::llama_file_type_name(*file_type), f.pure ? " (pure)" : "", r.tensors.size(), mix.c_str(),
              static_cast<unsigned long long>(r.metadata_keys), format_bytes(static_cast<double>(r.file_bytes)).c_str());
  return 0;
}

}  // namespace

MoeSubcommand add_quantize_command(CLI::App& moe) {
  auto flags = std::make_shared<QuantizeFlags>();
  auto& f = *flags;
  auto* q = moe.add_subcommand("quantize", "write a Hugging Face checkpoint as a GGUF file (llama.cpp's layout and types)");
  q->add_option("--model", f.model, "Hugging Face model directory (config.json + safetensors)")->required();
  q->add_option("--out", f.out, "GGUF file to write")->required();
  q->add_option("--type", f.type, std::string("file type, as llama-quantize names it: ") + quant::llama_file_type_names() +
                                      " (Q4_K is llama-quantize's alias of Q4_K_M)")
      ->capture_default_str();
  q->add_flag("--pure", f.pure, "every quantized tensor in the type itself, without llama.cpp's mix (llama-quantize --pure)");
  q->add_option("--threads", f.threads, "quantizing threads (0 = one per core)")->capture_default_str();
  q->add_option("--name", f.name, "general.name (default: the model directory's name)");
  return MoeSubcommand{q, [flags] { return run_quantize(*flags); }};
}

}  // namespace ferry::apps
