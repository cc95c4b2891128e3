// What the AMX kernels (kernels_amx.cc, kernels_amx_q6k.cc) share: the tile configuration LDTILECFG
// reads, the compiler barrier the tile intrinsics need, and their per-thread buffers. Internal to
// moe/quant; included above the kernels' target pragma, so that it compiles for any x86-64.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ferry::moe::quant::kernels {

// The palette-1 tile configuration (64 bytes, as LDTILECFG reads it): rows and bytes per row of
// each of the 8 tiles.
struct alignas(64) TileConfig {
  std::uint8_t palette = 1;
  std::uint8_t start_row = 0;
  std::uint8_t reserved[14] = {};
  std::uint16_t colsb[16] = {};
  std::uint8_t rows[16] = {};
};
static_assert(sizeof(TileConfig) == 64);

// GCC's tile intrinsics are asm statements that do not tell the compiler which memory they read
// (LDTILECFG: 8 of its 64 bytes, TILELOADD: none): a barrier before them keeps the stores they read
// in place.
inline void memory_barrier() { asm volatile("" ::: "memory"); }

// The AMX kernels' per-thread buffers, one per use.
enum class AmxScratch { kQ4kWeights, kQ4kScales, kQ4kPadded, kQ4kSums, kQ6kWeights, kQ6kActivations, kQ6kSums, kCount };
// This thread's buffer `which` of at least `bytes`, 64-byte aligned (a tile row or a 512-bit vector
// is then one cache line, not two); its contents are undefined. Defined in kernels_amx.cc outside
// the kernels' instruction sets: std::vector's code is shared with the rest of the program.
void* amx_scratch(AmxScratch which, std::size_t bytes);

}  // namespace ferry::moe::quant::kernels
