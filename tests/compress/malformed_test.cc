// Decoding is bounds-checked: every malformed payload is a FormatError and leaves the output
// untouched; random corruption never crashes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "compress/wire_format.h"
#include "core/error.h"
#include "test_util.h"

namespace ferry::compress {
namespace {

struct Subject {
  std::string spec;
  TensorInfo info;
};

std::vector<Subject> subjects(std::size_t n) {
  std::vector<Subject> s;
  for (const char* spec : {"none", "fp16", "twobit", "onebit", "qsgd", "terngrad",
                           "topk:ratio=0.1", "randomk:ratio=0.1", "dgc:ratio=0.1", "powersgd:rank=1"})
    s.push_back({spec, TensorInfo{.numel = n}});
  const std::int64_t cols = n % 10 == 0 ? 10 : 8;
  s.push_back({"powersgd:rank=2",
               TensorInfo{.numel = n, .shape = {static_cast<std::int64_t>(n) / cols, cols}}});
  return s;
}

// decode and decode_add both throw FormatError and leave their buffers as they were.
void expect_rejected(const Codec& c, const std::vector<std::byte>& payload, const std::string& what) {
  const std::size_t n = c.info().numel;
  std::vector<float> out(n, 42.0f), acc(n, -1.0f);
  EXPECT_THROW(c.decode(payload, out), FormatError) << c.name() << ": " << what;
  EXPECT_THROW(c.decode_add(payload, acc), FormatError) << c.name() << ": " << what;
  EXPECT_EQ(out, std::vector<float>(n, 42.0f)) << c.name() << ": " << what << " wrote output";
  EXPECT_EQ(acc, std::vector<float>(n, -1.0f)) << c.name() << ": " << what << " wrote output";
}

TEST(Malformed, HeaderAndLengthErrors) {
  for (const auto& s : subjects(100)) {
    auto c = make_codec(s.spec, s.info);
    std::vector<std::byte> good;
    c->encode(testing::normal_vector(100, 1), good);
    std::vector<float> out(100);
    ASSERT_NO_THROW(c->decode(good, out)) << s.spec;

    for (std::size_t len : {std::size_t{0}, std::size_t{1}, std::size_t{15}, std::size_t{16},
                            good.size() - 1}) {
      auto p = good;
      p.resize(std::min(len, good.size() - 1));
      expect_rejected(*c, p, "truncated to " + std::to_string(p.size()));
    }
    for (std::size_t extra : {1, 4, 8}) {
      auto p = good;
      p.resize(p.size() + extra, std::byte{0});
      expect_rejected(*c, p, "extended by " + std::to_string(extra));
    }
    auto p = good;
    p[0] = std::byte{0x47};
    expect_rejected(*c, p, "bad magic");
    p = good;
    p[1] = static_cast<std::byte>((std::to_integer<int>(good[1]) + 1) % 10);
    expect_rejected(*c, p, "other codec id");
    p = good;
    p[2] = std::byte{2};
    expect_rejected(*c, p, "future version");
    // No codec defines the high bit of the flags byte (PowerSGD's modes are 0 and 1; the others
    // define none), so a set flag is refused, never ignored.
    for (std::uint8_t flags : {std::uint8_t{0x80}, std::uint8_t{2}}) {
      p = good;
      p[3] = std::byte{flags};
      expect_rejected(*c, p, "flags " + std::to_string(flags));
    }
    for (std::uint64_t numel : {std::uint64_t{99}, std::uint64_t{101}, ~std::uint64_t{0}}) {
      p = good;
      store_le<std::uint64_t>(p.data() + 8, numel);
      expect_rejected(*c, p, "numel " + std::to_string(numel));
    }
    // A decode buffer of the wrong size is the caller's bug.
    std::vector<float> wrong(99);
    EXPECT_THROW(c->decode(good, wrong), InvalidArgument) << s.spec;
  }
}

TEST(Malformed, SparseCountsAndIndices) {
  for (const char* spec : {"topk:ratio=0.1", "randomk:ratio=0.1", "dgc:ratio=0.1"}) {
    auto c = testing::codec(spec, 100);
    std::vector<std::byte> good;
    c->encode(testing::normal_vector(100, 2), good);
    const std::uint32_t k = load_le<std::uint32_t>(good.data() + 4);
    ASSERT_EQ(k, 10u);
    for (std::uint32_t bad_k : {k - 1, k + 1, 101u, 0xffffffffu}) {
      auto p = good;
      store_le<std::uint32_t>(p.data() + 4, bad_k);
      expect_rejected(*c, p, "count " + std::to_string(bad_k));
    }
    auto p = good;
    store_le<std::uint32_t>(p.data() + 16 + 4 * 9, 100);  // last index = numel
    expect_rejected(*c, p, "index out of range");
    p = good;
    store_le<std::uint32_t>(p.data() + 16 + 4 * 9, 0xffffffffu);
    expect_rejected(*c, p, "index 2^32-1");
    p = good;
    std::memcpy(p.data() + 16 + 4, p.data() + 16, 4);  // duplicate
    expect_rejected(*c, p, "duplicate index");
    p = good;
    std::uint32_t a = load_le<std::uint32_t>(p.data() + 16), b = load_le<std::uint32_t>(p.data() + 20);
    store_le(p.data() + 16, b);
    store_le(p.data() + 20, a);
    expect_rejected(*c, p, "descending indices");
  }
}

TEST(Malformed, CodecSpecificFields) {
  {  // twobit: code 01, non-zero padding, bad threshold
    auto c = testing::codec("twobit", 17);
    std::vector<std::byte> good;
    c->encode(testing::normal_vector(17, 3), good);
    auto p = good;
    store_le<std::uint32_t>(p.data() + 16, 0x00000001u);
    expect_rejected(*c, p, "2-bit code 01");
    p = good;
    store_le<std::uint32_t>(p.data() + 20, load_le<std::uint32_t>(p.data() + 20) | 0x30u);
    expect_rejected(*c, p, "padding code");
    for (float t : {0.0f, -1.0f, std::nanf(""), 1.0f / 0.0f}) {
      p = good;
      store_le(p.data() + 4, float_bits(t));
      expect_rejected(*c, p, "threshold " + std::to_string(t));
    }
  }
  {  // terngrad: code 01, negative scale
    auto c = testing::codec("terngrad", 16);
    std::vector<std::byte> good;
    c->encode(testing::normal_vector(16, 3), good);
    auto p = good;
    store_le<std::uint32_t>(p.data() + 16, 0x40000000u);
    expect_rejected(*c, p, "2-bit code 01");
    for (float scale : {-1.0f, std::nanf(""), 1.0f / 0.0f}) {
      p = good;
      store_le(p.data() + 4, float_bits(scale));
      expect_rejected(*c, p, "scale " + std::to_string(scale));
    }
  }
  {  // onebit: padding bits, negative scale
    auto c = testing::codec("onebit", 33);
    std::vector<std::byte> good;
    c->encode(testing::normal_vector(33, 3), good);
    auto p = good;
    store_le<std::uint32_t>(p.data() + 20, load_le<std::uint32_t>(p.data() + 20) | 0x4u);
    expect_rejected(*c, p, "padding bit");
    for (float scale : {-1.0f, std::nanf(""), 1.0f / 0.0f}) {
      p = good;
      store_le(p.data() + 4, float_bits(scale));
      expect_rejected(*c, p, "scale " + std::to_string(scale));
    }
  }
  {  // qsgd: level above s, levels 0, padding
    auto c = testing::codec("qsgd:levels=2", 10);  // 3-bit fields: level 3 is invalid
    std::vector<std::byte> good;
    c->encode(testing::normal_vector(10, 3), good);
    const std::size_t stream = 16 + 4 + 4;  // header, bucket, one norm
    auto p = good;
    store_le<std::uint32_t>(p.data() + stream, load_le<std::uint32_t>(p.data() + stream) | 0x6u);
    expect_rejected(*c, p, "level 3 > s = 2");
    p = good;
    store_le<std::uint32_t>(p.data() + 4, 0);
    expect_rejected(*c, p, "levels 0");
    p = good;
    store_le<std::uint32_t>(p.data() + stream, load_le<std::uint32_t>(p.data() + stream) | 0x80000000u);
    expect_rejected(*c, p, "padding");
    p = good;
    store_le<std::uint32_t>(p.data() + 16, 0);
    expect_rejected(*c, p, "bucket 0");
    for (float norm : {-1.0f, std::nanf(""), 1.0f / 0.0f}) {
      p = good;
      store_le(p.data() + 16 + 4, float_bits(norm));
      expect_rejected(*c, p, "norm " + std::to_string(norm));
    }
  }
  {  // powersgd: unknown mode, matrix shape, rank
    auto c = make_codec("powersgd:rank=2", TensorInfo{.numel = 100, .shape = {10, 10}});
    std::vector<std::byte> good;
    c->encode(testing::normal_vector(100, 3), good);
    auto p = good;
    p[3] = std::byte{7};
    expect_rejected(*c, p, "mode 7");
    p = good;
    store_le<std::uint32_t>(p.data() + 16, 20);
    expect_rejected(*c, p, "rows 20");
    p = good;
    store_le<std::uint32_t>(p.data() + 4, 0);
    expect_rejected(*c, p, "rank 0");
    p = good;
    store_le<std::uint32_t>(p.data() + 16, 0);
    expect_rejected(*c, p, "rows 0");
  }
}

// QSGD's levels are floor(s |x| / norm) cast to an integer: a NaN or Inf element would cast NaN
// (undefined behaviour) and turn its whole bucket into NaN. encode() refuses it, naming it.
TEST(Malformed, QsgdRefusesNonFiniteGradients) {
  for (float bad : {std::nanf(""), 1.0f / 0.0f, -1.0f / 0.0f}) {
    auto c = testing::codec("qsgd:bucket=4", 10);
    auto g = testing::normal_vector(10, 5);
    g[6] = bad;
    std::vector<std::byte> out;
    try {
      c->encode(g, out);
      ADD_FAILURE() << "qsgd encoded " << bad;
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("element 6"), std::string::npos) << e.what();
    }
  }
  // A bucket too large for an fp32 norm is refused too.
  auto c = testing::codec("qsgd:bucket=4", 4);
  std::vector<float> huge(4, 3e38f);
  std::vector<std::byte> out;
  EXPECT_THROW(c->encode(huge, out), InvalidArgument);
  // A subnormal bucket (s / norm overflows fp32, norm / s underflows) still quantises: every
  // decoded value is finite, has the sign of its input and a magnitude of at most the norm, and the
  // largest element (|x| / norm = 0.8, so its level is at least 1 for any s >= 2) is not lost.
  std::vector<float> tiny = {1e-45f, -1e-45f, 0.0f, 2e-45f};
  c->encode(tiny, out);
  std::vector<float> back(4);
  c->decode(out, back);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_TRUE(std::isfinite(back[i])) << i;
    EXPECT_LE(std::fabs(back[i]), 3e-45f) << i;
    EXPECT_FALSE(back[i] != 0 && std::signbit(back[i]) != std::signbit(tiny[i])) << i;
  }
  EXPECT_GT(back[3], 0.0f);
  EXPECT_EQ(back[2], 0.0f);
}

TEST(Malformed, RandomCorruptionNeverCrashes) {
  std::mt19937 gen(17);
  for (const auto& s : subjects(64)) {
    auto c = make_codec(s.spec, s.info);
    std::vector<std::byte> good;
    c->encode(testing::normal_vector(64, 4), good);
    std::vector<float> out(64);
    for (int trial = 0; trial < 300; ++trial) {
      auto p = good;
      const int flips = 1 + trial % 4;
      for (int f = 0; f < flips; ++f) p[gen() % p.size()] ^= static_cast<std::byte>(1u << (gen() % 8));
      if (trial % 5 == 0) p.resize(gen() % (p.size() + 8));
      try {
        c->decode(p, out);
        c->decode_add(p, out);
      } catch (const FormatError&) {
      }
    }
  }
}

}  // namespace
}  // namespace ferry::compress
