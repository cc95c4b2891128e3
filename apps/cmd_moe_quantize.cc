// `ferry moe quantize`: a Hugging Face checkpoint to the GGUF file llama.cpp's converter and
// llama-quantize write (moe/model/gguf_export.h), with a table of what was written.
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "apps/gguf_flags.h"
#include "apps/moe_subcommands.h"
#include "core/error.h"
#include "core/path_checks.h"
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

int run_quantize(const QuantizeFlags& f) {
  const quant::LlamaFileType file_type = file_type_flag("--type", f.type);
  FERRY_REQUIRE(f.threads >= 0, "--threads ", f.threads, ": expected 0 (one per core) or more");
  // Before anything is written: --out inside the checkpoint (its model.safetensors, config.json)
  // or the input GGUF itself would be replaced by the file made from it.
  require_output_not_input(f.out, "--out", input_files(f.model), "--model");
  GgufExportOptions o;
  o.file_type = file_type;
  o.pure = f.pure;
  o.threads = f.threads;
  o.name = f.name;
  print_gguf_report(export_gguf(f.model, f.out, o), f.out, f.pure, /*table=*/true);
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
                                      " (Q4_K is llama-quantize's alias of Q4_K_M; MXFP4_MOE: experts in MXFP4, "
                                      "the rest Q8_0; MXFP4 is ferry's alias of it). MXFP4 experts (gpt-oss's "
                                      "quantization_config mxfp4) are copied block for block where the type keeps "
                                      "them in MXFP4: MXFP4_MOE, and F32, F16, BF16 as llama.cpp's converter "
                                      "(the file is then MXFP4_MOE)")
      ->capture_default_str();
  q->add_flag("--pure", f.pure, "every quantized tensor in the type itself, without llama.cpp's mix (llama-quantize --pure)");
  q->add_option("--threads", f.threads, "quantizing threads (0 = one per core)")->capture_default_str();
  q->add_option("--name", f.name, "general.name (default: the model directory's name)");
  return MoeSubcommand{q, [flags] { return run_quantize(*flags); }};
}

}  // namespace ferry::apps
