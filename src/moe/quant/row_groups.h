// The layout the block kernels read a weight matrix in: the stored blocks, reordered so that one
// vector load holds a few weights of several rows. Q8_0, Q4_0 and Q4_K matrices (rows × n) are
// kept in groups of kRowGroup = 8 rows; block b of a group holds the 8 rows' block b as
//
//   each scale field for rows 0..7 in turn (Q8_0, Q4_0: d; Q4_K: d, then dmin, then the 12 bytes
//   of 6-bit scales and mins), then the rows' quant bytes in 4-byte chunks, chunk c of row r at
//   4·(8·c + r) after the fields:  Q8_0: chunk c = weights 4c..4c+3 (c = 0..7);
//                                   Q4_0: chunk c = bytes 4c..4c+3 of the row's 16 (weights 4c.. in
//                                         the low nibbles, 16+4c.. in the high ones; c = 0..3);
//                                   Q4_K: chunk c = bytes 4c..4c+3 of the row's 128 (c = 0..31)
//
// so one 32-byte load gives 4 consecutive weights of each of 8 rows, and an integer dot product
// instruction (VNNI's vpdpbusd) sums them into one 32-bit lane per row: the 8 rows' products come
// out as one vector, scaled by the 8 scales in one multiply (ggml repacks Q4_0 and Q4_K into 8-row
// blocks for the same reason). The byte count is unchanged; the rows after the last whole group,
// and every other format, stay as stored. Data crosses links and sits in budgets in this layout.
#pragma once

#include <cstddef>

#include "moe/quant/quant_type.h"

namespace ferry::moe::quant {

constexpr std::size_t kRowGroup = 8;

// Whether `type` matrices are kept in row groups (Q8_0, Q4_0, Q4_K).
bool has_row_groups(QuantType type);
// Rows × n weights of `type` at `data`: stored layout → row groups, and back; in place.
void to_row_groups(QuantType type, void* data, std::size_t rows, std::size_t n);
void from_row_groups(QuantType type, void* data, std::size_t rows, std::size_t n);

}  // namespace ferry::moe::quant
