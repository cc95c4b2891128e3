// The recipe of docs/architecture.md ("a new codec is one file plus one registration line"),
// followed by a test-only codec: it is built by spec, listed, its options are typed and its
// unknown keys refused, and the registry's shared options (ef) apply to it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "compress/codec.h"
#include "compress/codec_registry.h"
#include "core/error.h"

namespace ferry::compress {
namespace {

// The "one file": raw fp32 on the wire, multiplied by `gain` when decoded.
class GainCodec final : public Codec {
 public:
  GainCodec(TensorInfo info, double gain) : Codec(std::move(info)), gain_(static_cast<float>(gain)) {}
  std::string name() const override { return "test-gain"; }
  void encode(std::span<const float> grad, std::vector<std::byte>& out) override {
    check_numel(grad.size(), "gradient");
    out.resize(grad.size_bytes());
    std::memcpy(out.data(), grad.data(), grad.size_bytes());
  }
  void decode(std::span<const std::byte> payload, std::span<float> out) const override {
    check_numel(out.size(), "decode output");
    if (payload.size() != out.size_bytes()) FERRY_THROW(FormatError, "test-gain: wrong payload size");
    std::memcpy(out.data(), payload.data(), payload.size());
    for (float& v : out) v *= gain_;
  }
  std::size_t encoded_size_bytes() const override { return 4 * info_.numel; }

 private:
  float gain_;
};

// The "one registration line".
void register_gain_codec(CodecRegistry& r) {
  r.add({"test-gain", "test only: fp32 scaled by gain on decode", FeedbackMode::kOptional,
         [](SpecReader& s, const TensorInfo& info) -> std::unique_ptr<Codec> {
           const double gain = s.get_double("gain", 1.0);
           FERRY_REQUIRE(gain > 0, "codec 'test-gain': gain must be greater than 0, got ", gain);
           return std::make_unique<GainCodec>(info, gain);
         }});
}

TEST(DummyCodec, IsBuiltBySpecListedAndUsed) {
  CodecRegistry r;
  register_builtin_codecs(r);
  register_gain_codec(r);
  const auto names = r.names();
  EXPECT_NE(std::find(names.begin(), names.end(), "test-gain"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "twobit"), names.end());

  auto c = r.make("test-gain:gain=2.5", TensorInfo{.numel = 3});
  EXPECT_EQ(c->name(), "test-gain");
  const std::vector<float> g = {1, -2, 0.5f};
  std::vector<std::byte> payload;
  c->encode(g, payload);
  std::vector<float> out(3);
  c->decode(payload, out);
  EXPECT_EQ(out, (std::vector<float>{2.5f, -5, 1.25f}));

  EXPECT_EQ(r.canonical("test-gain"), "test-gain:gain=1,ef=0,raw_1d=1");
  EXPECT_EQ(r.make("test-gain:ef=1", TensorInfo{.numel = 3})->name(), "test-gain+ef");
}

TEST(DummyCodec, UnknownKeysBadValuesAndDuplicatesAreRefused) {
  CodecRegistry r;
  register_gain_codec(r);
  try {
    r.make("test-gain:gian=2", TensorInfo{.numel = 3});
    ADD_FAILURE() << "unknown key accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("unknown option 'gian' (known: gain, ef, raw_1d)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(r.make("test-gain:gain=-1", TensorInfo{.numel = 3}), InvalidArgument);
  EXPECT_THROW(r.make("test-gain:gain=x", TensorInfo{.numel = 3}), InvalidArgument);
  EXPECT_THROW(register_gain_codec(r), InvalidArgument);
  // Not in the builtin registry: the test's registry is its own.
  EXPECT_THROW(make_codec("test-gain", TensorInfo{.numel = 3}), InvalidArgument);
}

}  // namespace
}  // namespace ferry::compress
