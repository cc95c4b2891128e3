// `ferry moe quantize`: a Hugging Face checkpoint written as the GGUF file that llama.cpp's
// convert_hf_to_gguf.py --outtype f32 followed by llama-quantize FILE_TYPE writes: the tensors,
// names, shapes and metadata of gguf_layout.h, each tensor in the type quant_mix.h chooses,
// quantized with ferry's reference quantizers (quantize.h, byte for byte llama.cpp's without an
// importance matrix), in llama-quantize's tensor order and key order.
//
// MXFP4 experts (gpt-oss's quantization_config mxfp4, MoeConfig::mxfp4_experts) are copied block
// for block, repacked as the converter repacks them (fused_experts.h), where the file keeps them in
// MXFP4: MXFP4_MOE, and F32, F16 and BF16, whose experts the converter writes in MXFP4 whatever its
// --outtype (GptOssModel), labelling the file MXFP4_MOE; any other type quantizes them from their
// values, as llama-quantize does from the converter's file.
//
// The file is streamed (GgufWriter with fills): one GGUF tensor is in memory at a time, in float32
// and in its type, so a Mixtral-8x7B (one layer's stacked experts: 8 x 14336 x 4096 weights) needs
// 1.9 GB plus the quantized copy (1.9 GB more in F32), not the model's 90 GB. Rows are quantized on
// `threads` threads.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "moe/model/config.h"
#include "moe/model/gguf_layout.h"
#include "moe/quant/quant_mix.h"
#include "moe/quant/quant_type.h"
#include "moe/tokenizer/tokenizer.h"

namespace ferry::moe {

struct GgufExportOptions {
  quant::LlamaFileType file_type = quant::LlamaFileType::kAllF32;  // --type
  bool pure = false;        // --pure: every quantized tensor in the file type's base type
  int threads = 0;          // quantizing (filling) threads; 0 = one per core
  std::string name;         // general.name; empty: the model directory's name (the converter's fallback)
                            // or, for a random model (random_gguf.h), the file's stem
  // Called after each tensor is written (index, count), e.g. for a progress line; may be empty.
  std::function<void(std::size_t, std::size_t)> progress = {};
};

struct GgufExportTensor {
  std::string name;
  std::vector<std::uint64_t> dims;
  quant::QuantType type = quant::QuantType::kF32;
  std::uint64_t bytes = 0;
};

struct GgufExportReport {
  std::string architecture;              // general.architecture
  quant::LlamaFileType file_type = quant::LlamaFileType::kAllF32;  // general.file_type (gguf_export.h)
  std::vector<GgufExportTensor> tensors;  // in file order
  std::uint64_t file_bytes = 0;
  std::uint64_t metadata_keys = 0;
  std::vector<std::string> notes;        // config values the file cannot carry (gguf_check_supported)
};

// Checks the checkpoint and the plan before writing anything: IoError for a missing or unreadable
// directory or an unwritable output, FormatError for a checkpoint tensor missing, of another shape
// or with no place in the family's GGUF layout, InvalidArgument for a model llama.cpp's
// architecture cannot hold or a tensor the file type cannot store.
GgufExportReport export_gguf(const std::string& model_dir, const std::string& out_path,
                             const GgufExportOptions& options);

// Produces one planned tensor in `type` into `out` (exactly its bytes: rows of dims[0] weights).
using GgufTensorFill =
    std::function<void(const GgufTensorPlan& tensor, quant::QuantType type, std::span<std::byte> out)>;

// What a GGUF model file is written from, whatever makes its weights.
struct GgufModelSource {
  MoeConfig config;                 // the model (checked by gguf_check_supported)
  TokenizerVocab vocab;             // the tokenizer's vocabulary (gguf_tokenizer_metadata)
  std::string tokenizer_dir;        // special tokens' files (tokenizer_config.json, ...); empty: none
  std::string name;                 // general.name
};

// The part of writing a GGUF model file that does not depend on where its weights come from
// (export_gguf from a checkpoint, write_random_gguf from a seed): the plan of the config, each
// tensor's type in the file type's mix (options.file_type, options.pure), the metadata in the
// converter's and llama-quantize's order (`hf_config`: config.json as read; general.name is
// source.name), then the file streamed through GgufWriter, `fill` producing one tensor at a time
// (options.progress after each). IoError when the file would not fit the free space where it
// goes, or cannot be written; InvalidArgument for a tensor the file type cannot store.
GgufExportReport write_gguf_model(const GgufModelSource& source, const nlohmann::json& hf_config,
                                  const std::string& out_path, const GgufExportOptions& options,
                                  const GgufTensorFill& fill);

}  // namespace ferry::moe
