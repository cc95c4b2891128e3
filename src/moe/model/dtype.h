// Element types of checkpoint tensors and their conversion to and from float32. U8 holds bytes
// that are not weights by themselves (MXFP4's blocks and scales, fused_experts.h): a weight
// loader refuses it (Checkpoint::expect).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace ferry::moe {

enum class DType { kF32, kF16, kBF16, kU8 };

// Bytes per element.
std::size_t dtype_size(DType dtype);
// Safetensors spelling: "F32", "F16", "BF16", "U8".
const char* dtype_name(DType dtype);
// Parses a float type's safetensors spelling (also "fp32", "float32", "bf16", ... for CLI flags).
std::optional<DType> parse_dtype(std::string_view text);

// Converts `n` elements of `dtype` at `src` to float32 at `dst` (unaligned sources allowed; U8:
// the bytes' values).
void convert_to_f32(DType dtype, const void* src, float* dst, std::size_t n);
// Converts `n` float32 values to a float `dtype` (bf16 and fp16 round to nearest even).
void convert_from_f32(DType dtype, const float* src, void* dst, std::size_t n);

}  // namespace ferry::moe
