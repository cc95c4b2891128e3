// The weight formats of GGUF (llama.cpp's file format) that ferry stores, moves and computes on.
// Each is a sequence of fixed-size blocks; a row of n weights is n / block_elems blocks. The
// numeric values are ggml's type ids, as written in a GGUF tensor header.
//
//   F32, F16, BF16  one element per "block"
//   Q8_0   32 weights: f16 scale d, 32 int8 q;              w = d·q                  34 bytes
//   Q4_0   32 weights: f16 d, 16 bytes of nibbles;           w = d·(q − 8)            18 bytes
//   Q4_K  256 weights: f16 d, f16 dmin, 12 bytes of 6-bit scales/mins for 8 sub-blocks of 32,
//         128 bytes of nibbles;                              w = d·sc·q − dmin·m      144 bytes
//   Q5_0   32 weights: f16 d, 4 bytes of 5th bits, 16 bytes of nibbles;  w = d·(q − 16)  22 bytes
//   Q5_1   32 weights: f16 d, f16 m, Q5_0's bits;          w = d·q + m              24 bytes
//   Q5_K  256 weights: Q4_K's scales and mins, 32 bytes of 5th bits, 128 bytes of nibbles;
//                                                            w = d·sc·q − dmin·m      176 bytes
//   Q6_K  256 weights: 128 bytes low nibbles, 64 bytes high 2-bit pairs, 16 int8 scales
//         (one per 16 weights), f16 d;                       w = d·sc·(q − 32)        210 bytes
//   MXFP4  32 weights: u8 E8M0 exponent e, 16 bytes of 4-bit E2M1 codes (as Q4_0's nibbles);
//                                                            w = 2^(e−127)·E2M1(q)     17 bytes
//          E2M1(q) = ±{0, 0.5, 1, 1.5, 2, 3, 4, 6} (bit 3 the sign). ggml computes it as
//          2^(e−128)·v[q] with v = 2·E2M1 = ±{0, 1, 2, 3, 4, 6, 8, 12} (kvalues_mxfp4), exact in
//          float32 except where it overflows (e ≥ 253 with a large code: ±Inf, as in ggml). e = 255
//          is NaN in the OCP MX spec; ggml decodes it as an ordinary exponent (2^128) but refuses it in
//          ggml_validate_row_data, and so does ferry where blocks come in (finite_blocks.h).
//          gpt-oss ships its experts in it; `ferry moe quantize --type MXFP4_MOE` writes it.
//
// Q5_0, Q5_1 and Q5_K are stored, written and read (llama.cpp's Q4_K_M mix uses them: quant_mix.h);
// of them only Q5_K is computed on (the mix stores attn_output in it, which
// would otherwise be held as float32, 5.8x its size), and none is a --weights format (matmul.h).
//
// Source: ggml/src/ggml-common.h (block layouts, kvalues_mxfp4), ggml-impl.h (ggml_e8m0_to_fp32_half)
// and ggml-quants.c (dequantize_row_*); MXFP4: the OCP Microscaling Formats (MX) v1.0 spec.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace ferry::moe::quant {

enum class QuantType : std::uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kBF16 = 30,
  kMXFP4 = 39,
};

struct QuantTraits {
  const char* name;         // GGUF/llama.cpp spelling: "F32", "Q4_K", ...
  std::size_t block_elems;  // weights per block
  std::size_t block_bytes;  // bytes per block
};

const QuantTraits& quant_traits(QuantType type);
inline const char* quant_name(QuantType type) { return quant_traits(type).name; }
// The type of a ggml type id, or nullopt for a type ferry does not implement.
std::optional<QuantType> quant_type_from_ggml(std::uint32_t ggml_type);
// Parses a name ("q4_0", "Q4_K", "f16", "bf16", ...; case-insensitive); nullopt when unknown.
std::optional<QuantType> parse_quant_type(std::string_view name);
// The experts' weight format of --weights: parse_quant_type of one of quant_type_names(), or
// InvalidArgument "--weights 'TEXT': expected one of F32, ...".
QuantType parse_weight_format(std::string_view text);
// Whether matmul.h computes on `type` (all but Q5_0 and Q5_1; Q5_K for the dense attention of
// Q4_K_M files, which is no --weights format).
bool quant_type_computed(QuantType type);
// "F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K, MXFP4" (the --weights formats) for error messages.
const char* quant_type_names();
// Every format ferry reads and writes: quant_type_names() and Q5_0, Q5_1, Q5_K.
const char* quant_stored_type_names();

// Bytes of a row of `n` weights; throws InvalidArgument when n is not a multiple of the block.
std::size_t quant_row_bytes(QuantType type, std::size_t n);
// Bytes of `rows` rows of `n` weights.
inline std::size_t quant_matrix_bytes(QuantType type, std::size_t rows, std::size_t n) {
  return rows * quant_row_bytes(type, n);
}
// Whether rows of `n` weights can be stored in `type`.
inline bool quant_row_fits(QuantType type, std::size_t n) { return n % quant_traits(type).block_elems == 0; }

}  // namespace ferry::moe::quant
