// Packing of fixed-width bit fields (1..32 bits) into little-endian 32-bit words, LSB first:
// field i occupies bits [i*b, (i+1)*b) of the stream; bit k of the stream is bit k%32 of
// word k/32. Used by QSGD, whose field width depends on the number of levels.
#pragma once

#include <cstddef>
#include <cstdint>

#include "compress/wire_format.h"

namespace ferry::compress {

// Bytes for `count` fields of `bits` bits, rounded up to whole 32-bit words.
constexpr std::size_t bit_stream_bytes(std::size_t count, unsigned bits) {
  return 4 * div_ceil(count * bits, 32);
}

class BitWriter {
 public:
  explicit BitWriter(std::byte* words) : out_(words) {}
  // Appends the low `bits` bits of v (the higher bits of v must be zero).
  void put(std::uint32_t v, unsigned bits) {
    acc_ |= static_cast<std::uint64_t>(v) << filled_;
    filled_ += bits;
    if (filled_ >= 32) {
      store_le<std::uint32_t>(out_, static_cast<std::uint32_t>(acc_));
      out_ += 4;
      acc_ >>= 32;
      filled_ -= 32;
    }
  }
  // Writes the last partial word (zero padded).
  void flush() {
    if (filled_ > 0) store_le<std::uint32_t>(out_, static_cast<std::uint32_t>(acc_));
    out_ += filled_ > 0 ? 4 : 0;
    acc_ = 0;
    filled_ = 0;
  }

 private:
  std::byte* out_;
  std::uint64_t acc_ = 0;
  unsigned filled_ = 0;
};

// Reads fields back; the caller guarantees the stream holds enough words (bit_stream_bytes).
class BitReader {
 public:
  explicit BitReader(const std::byte* words) : in_(words) {}
  std::uint32_t get(unsigned bits) {
    if (avail_ < bits) {
      acc_ |= static_cast<std::uint64_t>(load_le<std::uint32_t>(in_)) << avail_;
      in_ += 4;
      avail_ += 32;
    }
    const std::uint32_t v = static_cast<std::uint32_t>(acc_ & ((std::uint64_t{1} << bits) - 1));
    acc_ >>= bits;
    avail_ -= bits;
    return v;
  }
  // Bits left in the current word after the last field read (the padding of a final word).
  std::uint64_t leftover() const { return acc_; }

 private:
  const std::byte* in_;
  std::uint64_t acc_ = 0;
  unsigned avail_ = 0;
};

}  // namespace ferry::compress
