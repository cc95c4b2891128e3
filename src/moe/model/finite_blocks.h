// Whether a weight's bytes, as stored (GGUF blocks, or float32/f16/bf16 values), are finite — the
// check every path that brings expert bytes in makes (the host pool at load, the file link on each
// read), so that a NaN or Inf scale in a file is refused by name instead of decoding garbage.
//
// A block format's weights are d·q, d·(q − c), d·sc·q − dmin·m or d·q + m, with integer q, sc, m
// of at most 8 bits: they are all finite exactly when the block's f16 fields (d, dmin, m) are,
// since |w| ≤ 65504·255·255 < FLT_MAX. So one 2-byte test per field stands for dequantizing the
// block: Q8_0's 32 weights take one test, Q4_K's 256 take two.
//
// MXFP4's scale is an E8M0 byte e, 2^(e − 127): its one non-finite value is e = 255 (NaN in the OCP
// MX spec), which llama.cpp refuses too (ggml_validate_row_data, run by llama-quantize on what it
// writes and by the loader under --check-tensors). e = 253 and 254 are finite scales whose largest
// codes overflow float32 (±Inf weights), decoded so by llama.cpp as by ferry and mirrored rather
// than refused; no quantizer writes them (max|x| < 2^128 gives e ≤ 252).
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "moe/quant/quant_type.h"

namespace ferry::moe {

// The first non-finite block (a value for F32/F16/BF16) among the `bytes` bytes of `type` at
// `data` (stored layout, not the kernels' row groups), and the non-finite field as a float;
// nullopt when all are finite.
struct NonFiniteBlock {
  std::size_t block = 0;
  float value = 0;
};
std::optional<NonFiniteBlock> first_nonfinite_block(quant::QuantType type, const std::byte* data, std::size_t bytes);
// The same over the fields whose last byte lies in [begin, end) of the data at `data` (bytes
// before `begin` are read for a field that straddles it): a reader that checks each chunk as it
// lands, while it is in cache, checks every field exactly once.
std::optional<NonFiniteBlock> first_nonfinite_block(quant::QuantType type, const std::byte* data, std::size_t begin,
                                                    std::size_t end);

// FormatError "tensor 'NAME' (WHAT) in 'WHERE' holds a non-finite scale (nan) in block B:
// weights must be finite" ("value" and "element" for F32/F16/BF16; WHAT, e.g. "layer 0, expert 3",
// omitted when empty).
// `first_block`: the number of the block at `data` in the tensor (a chunk of it), for the message.
void require_finite_blocks(quant::QuantType type, const std::byte* data, std::size_t bytes, const std::string& name,
                           const std::string& where, const std::string& what = "", std::size_t first_block = 0);
// Over the fields that end in [begin, end), as first_nonfinite_block's range form.
void require_finite_blocks(quant::QuantType type, const std::byte* data, std::size_t begin, std::size_t end,
                           const std::string& name, const std::string& where, const std::string& what);

}  // namespace ferry::moe
