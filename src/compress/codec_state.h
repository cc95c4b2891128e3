// The byte format of Codec::save_state / load_state: a small versioned, bounds-checked record
// list, so that a checkpoint can carry every codec's mutable state.
//
// Layout (little-endian): "FCS" + version byte (1); u32 name length, the codec's name()
// ("twobit+ef"); u64 numel; then the codec's fields in a fixed order, each a u32 tag (the
// field's kind) followed by its data: u64 value; or u64 count + count floats; or u64 count +
// count bytes (a nested blob: the inner codec of an error-feedback decorator).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "compress/rng.h"

namespace ferry::compress {

class Codec;

inline constexpr std::uint8_t kCodecStateVersion = 1;

// Appends a state blob for `codec` to `out`: the header on construction, fields by call.
class CodecStateWriter {
 public:
  // `out` must outlive the writer (it is the caller's buffer, written in place).
  CodecStateWriter(const Codec& codec, std::vector<std::byte>& out);
  void put_u64(std::uint64_t value);
  void put_floats(std::span<const float> values);
  void put_bytes(std::span<const std::byte> bytes);

 private:
  std::vector<std::byte>* out_;  // see constructor
};

// Reads a blob written for a codec of the same name and numel. Every failure is a FormatError
// naming the codec and what was wrong: another codec or tensor size, another version, a field
// of the wrong kind or size, a truncated blob, or bytes left over at finish().
class CodecStateReader {
 public:
  // `state` must outlive the reader (spans into it are returned by bytes()).
  CodecStateReader(const Codec& codec, std::span<const std::byte> state);
  std::uint64_t u64(const char* what);
  // Exactly out.size() floats.
  void floats_into(std::span<float> out, const char* what);
  std::span<const std::byte> bytes(const char* what);
  // Throws unless the whole blob was consumed.
  void finish();

 private:
  [[noreturn]] void fail(const std::string& why) const;
  void take(void* dst, std::size_t n, const char* what);
  void expect_tag(std::uint32_t tag, const char* what);

  std::string name_;
  std::span<const std::byte> state_;
  std::size_t pos_ = 0;
};

// The whole state of a codec whose only mutable state is its random stream (qsgd, terngrad,
// randomk): save_state / load_state of such codecs are these two calls.
void save_random_stream(const Codec& codec, const SplitMix64& rng, std::vector<std::byte>& out);
void load_random_stream(const Codec& codec, SplitMix64& rng, std::span<const std::byte> state);

// The whole state of a codec whose only mutable state is one float vector (twobit's and onebit's
// residual, RawVelocityCodec's velocity); `what` names it in errors. load leaves `values`
// unchanged on any error.
void save_float_vector(const Codec& codec, std::span<const float> values, std::vector<std::byte>& out);
void load_float_vector(const Codec& codec, std::vector<float>& values, std::span<const std::byte> state,
                       const char* what);

}  // namespace ferry::compress
