// Experts that a Hugging Face checkpoint stores fused, one tensor per layer for all of them, as
// gpt-oss's modeling code holds them (ModelFamily::tensors.fused_experts):
//
//   model.layers.N.mlp.experts.gate_up_proj       [E, H, 2I]  x · W: gate at even columns, up at odd
//   model.layers.N.mlp.experts.gate_up_proj_bias  [E, 2I]     likewise interleaved
//   model.layers.N.mlp.experts.down_proj          [E, I, H]   h · W
//   model.layers.N.mlp.experts.down_proj_bias     [E, H]
//
// or, as the released checkpoints store the weights (config.mxfp4_experts: quantization_config
// mxfp4), in MXFP4, each row of W transposed (an output's weights) in blocks of 32, packed as
// moe/quant/mxfp4_hf.h describes:
//
//   model.layers.N.mlp.experts.gate_up_proj_blocks  [E, 2I, H/32, 16] u8  gate at even rows, up at odd
//   model.layers.N.mlp.experts.gate_up_proj_scales  [E, 2I, H/32]     u8
//   model.layers.N.mlp.experts.down_proj_blocks     [E, H, I/32, 16]  u8
//   model.layers.N.mlp.experts.down_proj_scales     [E, H, I/32]      u8
//
// ferry reads them under its per-expert names (TensorNames::expert: gate and up [I, H], down
// [H, I]) and per-layer bias names (TensorNames::expert_bias: [E, I], [E, I], [E, H]) — the
// parts llama.cpp's converter splits them into — MXFP4 parts as ggml's MXFP4 blocks (the
// converter's repacking) or dequantized, and writes them back fused.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "moe/model/config.h"
#include "moe/model/dtype.h"

namespace ferry::moe {

struct NamedTensor;

// One part of a fused tensor, read as a tensor of its own.
struct FusedPart {
  std::string source;               // the fused HF tensor (MXFP4: the name before _blocks / _scales)
  std::vector<std::int64_t> source_shape;  // its shape (row-major; MXFP4: the blocks' [E, R, C/32, 16])
  std::vector<std::int64_t> shape;  // the part's shape as ferry reads it (row-major)
  std::int64_t expert = -1;         // the source's slice along its first dim; -1: all of it
  int stride = 1, offset = 0;       // the columns taken: offset, offset + stride, ... of the last dim
                                    // (MXFP4: the rows of the expert's R)
  bool transpose = false;           // the slice's columns become the part's rows
  bool mxfp4 = false;               // the source is MXFP4 blocks and scales

  // The MXFP4 source's two tensors and the scales' shape ([E, R, C/32]).
  std::string blocks_name() const { return source + "_blocks"; }
  std::string scales_name() const { return source + "_scales"; }
  std::vector<std::int64_t> scales_shape() const { return {source_shape.begin(), source_shape.end() - 1}; }
};

// Every part of `config`'s fused experts by ferry's name; empty for a family that stores them apart.
std::unordered_map<std::string, FusedPart> fused_expert_parts(const MoeConfig& config);

// Reads float `part` from its source's bytes `source` (`dtype`, part.source_shape) into `dst`
// (float32, the part's numel).
void read_fused_part(const FusedPart& part, DType dtype, const std::byte* source, float* dst);

// Reads MXFP4 `part` from its source's `blocks` and `scales` into `dst`: its rows as ggml's MXFP4
// blocks (quant_matrix_bytes of the part's shape).
void read_mxfp4_part(const FusedPart& part, const std::byte* blocks, const std::byte* scales, std::byte* dst);

// The fused tensors of `tensors` (ferry's names, as random_tensors makes them): the experts'
// parts replaced by their HF tensors, in place of each layer's first part; with
// config.mxfp4_experts the weights quantized to MXFP4 (moe/quant/quantize.h, as ggml does) and
// packed as HF's *_blocks and *_scales. Unchanged for a family that stores experts apart.
std::vector<NamedTensor> fuse_expert_tensors(const MoeConfig& config, std::vector<NamedTensor> tensors);

}  // namespace ferry::moe
