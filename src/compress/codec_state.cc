#include "compress/codec_state.h"

#include <cstring>

#include "compress/codec.h"
#include "core/error.h"

namespace ferry::compress {
namespace {

constexpr char kMagic[3] = {'F', 'C', 'S'};
constexpr std::uint32_t kTagU64 = 1, kTagFloats = 2, kTagBytes = 3;

void append(std::vector<std::byte>& out, const void* data, std::size_t n) {
  const auto* p = static_cast<const std::byte*>(data);
  out.insert(out.end(), p, p + n);
}

template <typename T>
void append_value(std::vector<std::byte>& out, T v) {
  append(out, &v, sizeof v);  // x86-64 and aarch64 targets are little-endian
}

const char* tag_name(std::uint32_t tag) {
  switch (tag) {
    case kTagU64: return "an integer";
    case kTagFloats: return "a float vector";
    case kTagBytes: return "a byte blob";
    default: return "an unknown field";
  }
}

}  // namespace

CodecStateWriter::CodecStateWriter(const Codec& codec, std::vector<std::byte>& out) : out_(&out) {
  append(out, kMagic, sizeof kMagic);
  append_value(out, kCodecStateVersion);
  const std::string name = codec.name();
  append_value(out, static_cast<std::uint32_t>(name.size()));
  append(out, name.data(), name.size());
  append_value(out, static_cast<std::uint64_t>(codec.info().numel));
}

void CodecStateWriter::put_u64(std::uint64_t value) {
  append_value(*out_, kTagU64);
  append_value(*out_, value);
}

void CodecStateWriter::put_floats(std::span<const float> values) {
  append_value(*out_, kTagFloats);
  append_value(*out_, static_cast<std::uint64_t>(values.size()));
  if (!values.empty()) append(*out_, values.data(), values.size_bytes());
}

void CodecStateWriter::put_bytes(std::span<const std::byte> bytes) {
  append_value(*out_, kTagBytes);
  append_value(*out_, static_cast<std::uint64_t>(bytes.size()));
  if (!bytes.empty()) append(*out_, bytes.data(), bytes.size());
}

CodecStateReader::CodecStateReader(const Codec& codec, std::span<const std::byte> state)
    : name_(codec.name()), state_(state) {
  char magic[3];
  std::uint8_t version = 0;
  take(magic, sizeof magic, "header");
  if (std::memcmp(magic, kMagic, sizeof kMagic) != 0) fail("not a codec state blob");
  take(&version, sizeof version, "header");
  if (version != kCodecStateVersion)
    fail("state version " + std::to_string(version) + ", this build reads version " +
         std::to_string(kCodecStateVersion));
  std::uint32_t len = 0;
  take(&len, sizeof len, "codec name");
  if (len > state_.size() - pos_) fail("truncated in the codec name");
  const std::string saved(reinterpret_cast<const char*>(state_.data() + pos_), len);
  pos_ += len;
  if (saved != name_) fail("it was saved by codec '" + saved + "'");
  std::uint64_t numel = 0;
  take(&numel, sizeof numel, "tensor size");
  if (numel != codec.info().numel)
    fail("it was saved for a tensor of " + std::to_string(numel) + " elements, this one has " +
         std::to_string(codec.info().numel));
}

void CodecStateReader::fail(const std::string& why) const {
  FERRY_THROW(FormatError, "codec state for ", name_, ": ", why, " (", state_.size(), " bytes)");
}

void CodecStateReader::take(void* dst, std::size_t n, const char* what) {
  if (n > state_.size() - pos_) fail(std::string("truncated in ") + what);
  if (n > 0) std::memcpy(dst, state_.data() + pos_, n);
  pos_ += n;
}

void CodecStateReader::expect_tag(std::uint32_t tag, const char* what) {
  std::uint32_t got = 0;
  take(&got, sizeof got, what);
  if (got != tag)
    fail(std::string(what) + " is " + tag_name(got) + ", expected " + tag_name(tag));
}

std::uint64_t CodecStateReader::u64(const char* what) {
  expect_tag(kTagU64, what);
  std::uint64_t v = 0;
  take(&v, sizeof v, what);
  return v;
}

void CodecStateReader::floats_into(std::span<float> out, const char* what) {
  expect_tag(kTagFloats, what);
  std::uint64_t count = 0;
  take(&count, sizeof count, what);
  if (count != out.size())
    fail(std::string(what) + " has " + std::to_string(count) + " values, expected " +
         std::to_string(out.size()));
  take(out.data(), out.size_bytes(), what);
}

std::span<const std::byte> CodecStateReader::bytes(const char* what) {
  expect_tag(kTagBytes, what);
  std::uint64_t count = 0;
  take(&count, sizeof count, what);
  if (count > state_.size() - pos_) fail(std::string("truncated in ") + what);
  auto out = state_.subspan(pos_, count);
  pos_ += count;
  return out;
}

void CodecStateReader::finish() {
  if (pos_ != state_.size()) fail(std::to_string(state_.size() - pos_) + " trailing bytes");
}

void save_random_stream(const Codec& codec, const SplitMix64& rng, std::vector<std::byte>& out) {
  CodecStateWriter(codec, out).put_u64(rng.state());
}

void load_random_stream(const Codec& codec, SplitMix64& rng, std::span<const std::byte> state) {
  CodecStateReader in(codec, state);
  const std::uint64_t rng_state = in.u64("random stream");
  in.finish();
  rng.set_state(rng_state);
}

void save_float_vector(const Codec& codec, std::span<const float> values, std::vector<std::byte>& out) {
  CodecStateWriter(codec, out).put_floats(values);
}

void load_float_vector(const Codec& codec, std::vector<float>& values, std::span<const std::byte> state,
                       const char* what) {
  CodecStateReader in(codec, state);
  std::vector<float> loaded(values.size());
  in.floats_into(loaded, what);
  in.finish();
  values.swap(loaded);
}

}  // namespace ferry::compress
