// The layout the block kernels read a weight matrix in: the stored blocks, reordered so that one
// vector load holds a few weights (or scales) of several rows. Q8_0, Q4_0, MXFP4 and Q4_K matrices
// (rows × n) are kept in groups of kRowGroup = 8 rows; block b of a group holds the 8 rows' block
// b as its parts one after the other, each part interleaved across the rows in chunks: chunk c
// of row r at chunk·(8·c + r) from the part's start.
//
//   Q8_0, Q4_0  d (one 2-byte chunk per row), then the quants in 4-byte chunks
//               (Q8_0: chunk c = weights 4c..4c+3; Q4_0: chunk c = bytes 4c..4c+3 of the row's 16,
//               weights 4c.. in the low nibbles and 16+4c.. in the high ones)
//   MXFP4       e (one 1-byte chunk per row), then the codes in 4-byte chunks as Q4_0's
//   Q4_K        d, dmin (2-byte chunks), the 12 bytes of 6-bit scales and mins in 1-byte chunks,
//               then the 128 quant bytes in 4-byte chunks
//
// so one 32-byte load gives 4 consecutive weights of each of 8 rows, and an integer dot product
// instruction (VNNI's vpdpbusd) sums them into one 32-bit lane per row: the 8 rows' products come
// out as one vector, scaled by the 8 rows' scales loaded as one vector (ggml repacks Q4_0 and Q4_K
// into 8-row blocks for the same reason). The byte count is unchanged; the rows after the last
// whole group, and every other format, stay as stored. Data crosses links and sits in budgets in
// this layout.
#pragma once

#include <cstddef>

#include "moe/quant/quant_type.h"

namespace ferry::moe::quant {

constexpr std::size_t kRowGroup = 8;

// Whether `type` matrices are kept in row groups (Q8_0, Q4_0, MXFP4, Q4_K). Q6_K is not: its row-group
// kernel (8 rows of 6-bit weights rebuilt from ql/qh per chunk) measured 1.8x slower than the
// row-by-row dot product on this project's CPU, so Q6_K rows stay as stored.
bool has_row_groups(QuantType type);
// Rows × n weights of `type` at `data`: stored layout → row groups, and back; in place.
void to_row_groups(QuantType type, void* data, std::size_t rows, std::size_t n);
// The same from `stored` into `grouped` (not overlapping): whole groups reordered, the rows after
// the last one copied. A reader that lands each chunk of whole groups this way, straight from its
// read buffer, reorders the matrix as to_row_groups does with no pass of its own over it.
void to_row_groups(QuantType type, const void* stored, void* grouped, std::size_t rows, std::size_t n);
void from_row_groups(QuantType type, void* data, std::size_t rows, std::size_t n);

}  // namespace ferry::moe::quant
