// Experts that a Hugging Face checkpoint stores fused, one tensor per layer for all of them, as
// gpt-oss's modeling code holds them (ModelFamily::tensors.fused_experts):
//
//   model.layers.N.mlp.experts.gate_up_proj       [E, H, 2I]  x · W: gate at even columns, up at odd
//   model.layers.N.mlp.experts.gate_up_proj_bias  [E, 2I]     likewise interleaved
//   model.layers.N.mlp.experts.down_proj          [E, I, H]   h · W
//   model.layers.N.mlp.experts.down_proj_bias     [E, H]
//
// ferry reads them under its per-expert names (TensorNames::expert: gate and up [I, H], down
// [H, I]) and per-layer bias names (TensorNames::expert_bias: [E, I], [E, I], [E, H]) — the
// parts llama.cpp's converter splits them into — and writes them back fused. MXFP4 experts
// (gate_up_proj_blocks / _scales) are refused by name.
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
  std::string source;               // the fused HF tensor
  std::vector<std::int64_t> source_shape;  // its shape (row-major)
  std::vector<std::int64_t> shape;  // the part's shape as ferry reads it (row-major)
  std::int64_t expert = -1;         // the source's slice along its first dim; -1: all of it
  int stride = 1, offset = 0;       // the columns taken: offset, offset + stride, ... of the last dim
  bool transpose = false;           // the slice's columns become the part's rows
};

// Every part of `config`'s fused experts by ferry's name; empty for a family that stores them apart.
std::unordered_map<std::string, FusedPart> fused_expert_parts(const MoeConfig& config);

// Reads `part` from its source's bytes `source` (`dtype`, part.source_shape) into `dst` (float32,
// the part's numel).
void read_fused_part(const FusedPart& part, DType dtype, const std::byte* source, float* dst);

// The fused tensors of `tensors` (ferry's names, as random_tensors makes them): the experts'
// parts replaced by their HF tensors, in place of each layer's first part. Unchanged for a
// family that stores experts apart.
std::vector<NamedTensor> fuse_expert_tensors(const MoeConfig& config, std::vector<NamedTensor> tensors);

// FormatError naming `name` when a checkpoint holds MXFP4 experts (its *_blocks tensors).
[[noreturn]] void refuse_mxfp4_experts(const std::string& name, const std::string& where);

}  // namespace ferry::moe
