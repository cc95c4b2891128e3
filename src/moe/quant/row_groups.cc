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
  return {{0, 2, 2}, {2, quant_traits(type).block_bytes - 2, kChunk}};                        // Q8_0, Q4_0: d, qs
}

// Calls piece(stored, grouped, bytes) for every piece of a group of 8 rows: its offset in the
// stored rows and in the group layout.
template <typename Piece>
void for_each_piece(QuantType type, std::size_t n, Piece&& piece) {
  const std::size_t block = quant_traits(type).block_bytes, nb = n / quant_traits(type).block_elems;
  const std::size_t row = nb * block;
  const std::vector<Part> parts = parts_of(type);
  for (std::size_t b = 0; b < nb; ++b) {
    std::size_t g = b * kRowGroup * block;  // where the next part of the group's block goes
    for (const Part& p : parts) {
      for (std::size_t r = 0; r < kRowGroup; ++r)
        for (std::size_t c = 0; c < p.bytes / p.chunk; ++c)
          piece(r * row + b * block + p.offset + p.chunk * c, g + p.chunk * (kRowGroup * c + r), p.chunk);
      g += kRowGroup * p.bytes;
    }
  }
}

void move(QuantType type, void* data, std::size_t rows, std::size_t n, bool to_groups) {
  if (!has_row_groups(type)) return;
  const std::size_t group = kRowGroup * quant_row_bytes(type, n);
  std::vector<unsigned char> tmp(group);
  auto* p = static_cast<unsigned char*>(data);
  for (std::size_t r = 0; r + kRowGroup <= rows; r += kRowGroup, p += group) {
    std::memcpy(tmp.data(), p, group);
    for_each_piece(type, n, [&](std::size_t stored, std::size_t grouped, std::size_t bytes) {
      if (to_groups)
        std::memcpy(p + grouped, tmp.data() + stored, bytes);
      else
        std::memcpy(p + stored, tmp.data() + grouped, bytes);
    });
  }
}

}  // namespace

bool has_row_groups(QuantType type) {
  return type == QuantType::kQ8_0 || type == QuantType::kQ4_0 || type == QuantType::kQ4_K;
}

void to_row_groups(QuantType type, void* data, std::size_t rows, std::size_t n) { move(type, data, rows, n, true); }
void from_row_groups(QuantType type, void* data, std::size_t rows, std::size_t n) { move(type, data, rows, n, false); }

}  // namespace ferry::moe::quant
