// What `ferry moe quantize` and `ferry moe make-tiny --gguf` share: the llama-quantize file type
// flag and the lines that say what a written GGUF file holds.
#pragma once

#include <string>

#include "moe/model/gguf_export.h"
#include "moe/quant/quant_mix.h"

namespace ferry::apps {

// A file type as llama-quantize names it (quant::parse_llama_file_type). InvalidArgument
// "FLAG 'TEXT': expected one of F32, ...".
moe::quant::LlamaFileType file_type_flag(const std::string& flag, const std::string& text);

// The notes, then (with `table`) one line per tensor (name, type, dims, bytes), then
// "wrote PATH: GGUF ARCH, TYPE, N tensors: <count type (bytes)>, ...; K metadata keys, SIZE" (TYPE
// the file type written, report.file_type).
void print_gguf_report(const moe::GgufExportReport& report, const std::string& path, bool pure, bool table);

}  // namespace ferry::apps
