// The packed wire format shared by every codec: a 16-byte header, then codec-specific words.
//
//   offset 0  u8  magic 'F' (0x46)
//   offset 1  u8  codec id (CodecId)
//   offset 2  u8  format version (kWireVersion)
//   offset 3  u8  flags (codec-specific, e.g. PowerSGD's raw/low-rank mode)
//   offset 4  u32 aux   (codec-specific: twobit threshold bits, top-k count k, QSGD levels...)
//   offset 8  u64 numel (elements of the tensor)
//
// All multi-byte fields are little-endian; payloads may sit at any alignment, so every access
// goes through load_le/store_le (memcpy, compiled to plain moves).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

namespace ferry::compress {

static_assert(std::endian::native == std::endian::little,
              "the wire format is little-endian; add byte swaps for big-endian hosts");

enum class CodecId : std::uint8_t {
  kNone = 0,
  kFp16 = 1,
  kTwobit = 2,
  kOnebit = 3,
  kQsgd = 4,
  kTerngrad = 5,
  kTopk = 6,
  kRandomk = 7,
  kDgc = 8,
  kPowersgd = 9,
};
const char* codec_id_name(CodecId id);

inline constexpr std::uint8_t kWireMagic = 0x46;  // 'F'
inline constexpr std::uint8_t kWireVersion = 1;
inline constexpr std::size_t kHeaderBytes = 16;

struct PayloadHeader {
  CodecId codec = CodecId::kNone;
  std::uint8_t flags = 0;
  std::uint32_t aux = 0;
  std::uint64_t numel = 0;
};

template <typename T>
inline T load_le(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <typename T>
inline void store_le(std::byte* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

// Resizes out to total_bytes and writes the header into its first kHeaderBytes.
void write_header(std::vector<std::byte>& out, std::size_t total_bytes, const PayloadHeader& h);

// Reads and validates the header: payload at least kHeaderBytes, magic, version, codec id equal
// to `expected`, numel equal to `expected_numel`, flags at most `max_flags` (codecs that define
// no flags pass 0, so a set flags byte is refused rather than ignored). Throws FormatError naming
// what differs.
PayloadHeader read_header(std::span<const std::byte> payload, CodecId expected,
                          std::size_t expected_numel, std::uint8_t max_flags = 0);

// Throws FormatError unless payload.size() == expected_bytes.
void check_payload_size(std::span<const std::byte> payload, std::size_t expected_bytes,
                        CodecId codec);

inline std::uint32_t float_bits(float f) { return std::bit_cast<std::uint32_t>(f); }
inline float bits_float(std::uint32_t u) { return std::bit_cast<float>(u); }

// ceil(a / b) for b > 0.
constexpr std::size_t div_ceil(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

}  // namespace ferry::compress
