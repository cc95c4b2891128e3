#include "moe/quant/row_groups.h"

#include <cstring>
#include <vector>

namespace ferry::moe::quant {
namespace {

constexpr std::size_t kScaleBytes = 2;  // the f16 scale that opens a Q8_0 or Q4_0 block
constexpr std::size_t kChunk = 4;

// Calls piece(stored, grouped, bytes) for every piece of a group of 8 rows: its offset in the
// stored rows and in the group layout (row_groups.h).
template <typename Piece>
void for_each_piece(QuantType type, std::size_t n, Piece&& piece) {
  const std::size_t block = quant_traits(type).block_bytes, nb = n / quant_traits(type).block_elems;
  const std::size_t row = nb * block;
  for (std::size_t b = 0; b < nb; ++b) {
    const std::size_t g = b * kRowGroup * block;
    for (std::size_t r = 0; r < kRowGroup; ++r) {
      const std::size_t s = r * row + b * block;
      piece(s, g + kScaleBytes * r, kScaleBytes);
      for (std::size_t c = 0; c < (block - kScaleBytes) / kChunk; ++c)
        piece(s + kScaleBytes + kChunk * c, g + kRowGroup * kScaleBytes + kChunk * (kRowGroup * c + r), kChunk);
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

bool has_row_groups(QuantType type) { return type == QuantType::kQ8_0 || type == QuantType::kQ4_0; }

void to_row_groups(QuantType type, void* data, std::size_t rows, std::size_t n) { move(type, data, rows, n, true); }
void from_row_groups(QuantType type, void* data, std::size_t rows, std::size_t n) { move(type, data, rows, n, false); }

}  // namespace ferry::moe::quant
