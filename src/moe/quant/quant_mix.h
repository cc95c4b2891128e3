// llama-quantize's file types and its choice of a type per tensor: what `llama-quantize MODEL-F32.gguf
// OUT.gguf TYPE` writes for each tensor of a model converted to float32 (convert_hf_to_gguf.py
// --outtype f32). Source: llama.cpp src/llama-quant.cpp, llama_model_quantize_impl (which tensors
// are quantized) and llama_tensor_get_type (the mix), at commit c392e509 (2025-02-20).
//
// Quantized: 2-D and 3-D tensors named *weight, except *_norm.weight and *ffn_gate_inp.weight;
// every other tensor keeps float32. A quantized tensor gets the file type's base type, then
// (unless `pure`, llama-quantize --pure, and only for a quantized base) the mix:
//
//   output.weight (token_embd.weight when the model has no output): Q8_0 when its rows are not
//                 whole blocks of the base type, else Q6_K unless the base is Q8_0
//   attn_v.weight Q4_K_M: Q6_K in the layers use_more_bits picks (counted over attn_v tensors
//                 in file order); with 8 experts: Q8_0 (every file type)
//   attn_k.weight with 8 experts: Q8_0
//   ffn_down*     Q4_K_M: Q6_K in the layers use_more_bits picks (the layer from the name)
//   attn_output.weight with 8 experts, Q4_K_M: Q5_K
//
//   use_more_bits(i, n) = i < n/8 || i >= 7n/8 || (i − n/8) % 3 == 2
//
// MXFP4_MOE (llama.cpp's LLAMA_FTYPE_MOSTLY_MXFP4_MOE, later than the commit above: 80fb11ac,
// 2026-09) has a mix of its own instead of the rules above: output.weight (token_embd.weight when
// the model has no output) Q8_0; a 3-D tensor with more than one matrix (ne[2] > 1: the routed
// experts, and DeepSeek's per-head attn_k_b / attn_v_b, which llama.cpp does not tell apart) MXFP4;
// every other quantized tensor Q8_0. `--type MXFP4` is ferry's alias of it.
//
// then a type whose blocks do not divide the rows falls back: Q4_K -> Q5_0, Q5_K -> Q5_1,
// Q6_K -> Q8_0, then F16 when the fallback does not fit either; any other type aborts
// llama-quantize, and is an InvalidArgument naming the tensor here. Not modelled: llama.cpp's 70B special case of attn_v (a
// llama-architecture model of 80 layers without 8 experts), the IQ and Q2/Q3/Q5 file types,
// --imatrix, --output-tensor-type, --token-embedding-type.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "moe/quant/quant_type.h"

namespace ferry::moe::quant {

// llama.cpp's llama_ftype values of the file types ferry writes (GGUF's general.file_type).
enum class LlamaFileType : std::uint32_t {
  kAllF32 = 0,
  kMostlyF16 = 1,
  kMostlyQ4_0 = 2,
  kMostlyQ8_0 = 7,
  kMostlyQ4_K_M = 15,
  kMostlyQ6_K = 18,
  kMostlyBF16 = 32,
  kMostlyMXFP4_MOE = 38,
};

// llama-quantize's names: F32, F16, BF16, Q8_0, Q4_0, Q4_K_M, Q4_K (its alias of Q4_K_M), Q6_K,
// MXFP4_MOE and MXFP4 (ferry's alias of MXFP4_MOE) (case-insensitive); nullopt for another.
std::optional<LlamaFileType> parse_llama_file_type(std::string_view name);
// "F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q4_K_M, Q6_K, MXFP4, MXFP4_MOE" for messages.
const char* llama_file_type_names();
// "Q4_K_M", ...
const char* llama_file_type_name(LlamaFileType type);
// The type of a quantized tensor before the mix (Q4_K for Q4_K_M, MXFP4 for MXFP4_MOE).
QuantType llama_file_type_base(LlamaFileType type);

// One tensor of the file, by its GGUF name and ggml dims (row length first).
struct MixTensor {
  std::string name;
  std::vector<std::uint64_t> dims;
};

struct MixOptions {
  LlamaFileType file_type = LlamaFileType::kMostlyQ4_K_M;
  bool pure = false;  // llama-quantize --pure: every quantized tensor in the base type
  int n_layer = 0;    // <arch>.block_count
  int n_expert = 0;   // <arch>.expert_count
};

// The type of each tensor, in the order given; the tensors are visited in llama-quantize's order
// (gguf_tensor_order()), which the attn_v count depends on.
std::vector<QuantType> choose_tensor_types(const std::vector<MixTensor>& tensors, const MixOptions& options);

// llama.cpp's order of a model's tensors (llama_model_loader's weight_name_comparer): the layer
// number of "blk.N." (-1 without one), then the name. llama-quantize writes them in this order.
bool gguf_tensor_order(const std::string& a, const std::string& b);

}  // namespace ferry::moe::quant
