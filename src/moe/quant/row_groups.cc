#include "moe/quant/row_groups.h"

#include <cstring>
#include <utility>
#include <vector>

namespace ferry::moe::quant {
namespace {

constexpr std::size_t kChunk = 4;

// A format's block as parts (offset, bytes) interleaved across the 8 rows in chunks of `chunk`
// bytes: chunk c of row r at 8·chunk·c + chunk·r after the previous parts (row_groups.h).
struct Part {
  std::size_t offset, bytes, chunk;
};

std::vector<Part> parts_of(QuantType type) {
  if (type == QuantType::kQ4_K) return {{0, 2, 2}, {2, 2, 2}, {4, 12, 1}, {16, 128, kChunk}};  // d, dmin, scales, qs
  if (type == QuantType::kMXFP4) return {{0, 1, 1}, {1, 16, kChunk}};                          // e, qs
  return {{0, 2, 2}, {2, quant_traits(type).block_bytes - 2, kChunk}};                        // Q8_0, Q4_0: d, qs
}

// Copies one part of one block for the 8 rows of a group: chunk c of row r between the stored
// rows (row r at r·row, the part at `stored`) and the group layout (at 8·C·c + C·r after
// `grouped`). C is a compile-time size, so that each copy is one move.
template <std::size_t C, bool kToGroups>
void copy_part(unsigned char* out, const unsigned char* in, std::size_t row, std::size_t stored, std::size_t grouped,
               std::size_t bytes) {
  for (std::size_t r = 0; r < kRowGroup; ++r)
    for (std::size_t c = 0; c < bytes / C; ++c) {
      const std::size_t s = r * row + stored + C * c, g = grouped + C * (kRowGroup * c + r);
      if constexpr (kToGroups)
        std::memcpy(out + g, in + s, C);
      else
        std::memcpy(out + s, in + g, C);
    }
}

template <bool kToGroups>
void copy_group(QuantType type, unsigned char* out, const unsigned char* in, std::size_t n, const std::vector<Part>& parts) {
  const std::size_t block = quant_traits(type).block_bytes, nb = n / quant_traits(type).block_elems;
  const std::size_t row = nb * block;
  for (std::size_t b = 0; b < nb; ++b) {
    std::size_t g = b * kRowGroup * block;  // where the next part of the group's block goes
    for (const Part& p : parts) {
      const std::size_t stored = b * block + p.offset;
      switch (p.chunk) {
        case 1: copy_part<1, kToGroups>(out, in, row, stored, g, p.bytes); break;
        case 2: copy_part<2, kToGroups>(out, in, row, stored, g, p.bytes); break;
        default: copy_part<kChunk, kToGroups>(out, in, row, stored, g, p.bytes); break;
      }
      g += kRowGroup * p.bytes;
    }
  }
}

void move(QuantType type, void* data, std::size_t rows, std::size_t n, bool to_groups) {
  if (!has_row_groups(type)) return;
  const std::size_t group = kRowGroup * quant_row_bytes(type, n);
  const std::vector<Part> parts = parts_of(type);
  std::vector<unsigned char> tmp(group);
  auto* p = static_cast<unsigned char*>(data);
  for (std::size_t r = 0; r + kRowGroup <= rows; r += kRowGroup, p += group) {
    std::memcpy(tmp.data(), p, group);
    if (to_groups)
      copy_group<true>(type, p, tmp.data(), n, parts);
    else
      copy_group<false>(type, p, tmp.data(), n, parts);
  }
}

}  // namespace

bool has_row_groups(QuantType type) {
  return type == QuantType::kQ8_0 || type == QuantType::kQ4_0 || type == QuantType::kMXFP4 || type == QuantType::kQ4_K;
}

void to_row_groups(QuantType type, void* data, std::size_t rows, std::size_t n) { move(type, data, rows, n, true); }
void to_row_groups(QuantType type, const void* stored, void* grouped, std::size_t rows, std::size_t n) {
  const std::size_t row = quant_row_bytes(type, n);
  std::size_t whole = 0;  // rows reordered
  if (has_row_groups(type)) {
    const std::vector<Part> parts = parts_of(type);
    whole = rows / kRowGroup * kRowGroup;
    for (std::size_t r = 0; r < whole; r += kRowGroup)
      copy_group<true>(type, static_cast<unsigned char*>(grouped) + r * row,
                       static_cast<const unsigned char*>(stored) + r * row, n, parts);
  }
  std::memcpy(static_cast<unsigned char*>(grouped) + whole * row, static_cast<const unsigned char*>(stored) + whole * row,
              (rows - whole) * row);
}
void from_row_groups(QuantType type, void* data, std::size_t rows, std::size_t n) { move(type, data, rows, n, false); }

}  // namespace ferry::moe::quant
