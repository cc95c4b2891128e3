// Codec::save_state / load_state: a fresh codec that loads the state of one that ran 7 steps
// continues exactly like it, for every codec of the registry; bad blobs are FormatErrors.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "compress/codec_registry.h"
#include "compress/codec_state.h"
#include "core/error.h"
#include "test_util.h"

namespace ferry::compress {
namespace {

// Every registered codec with error feedback on (ef=1 is accepted by all of them: optional,
// default-on and built-in), plus the variants whose state has more to it: PowerSGD and DGC
// with a warm-up that ends after the resume point, the sparsifiers and fp16 without feedback.
std::vector<std::string> specs() {
  std::vector<std::string> out;
  for (const auto& name : builtin_codec_registry().names()) out.push_back(name + ":ef=1");
  for (const char* extra : {"powersgd:rank=2,warmup=9", "dgc:ratio=0.01,warmup=10,clip=3",
                            "topk:ratio=0.05,ef=0", "randomk:ratio=0.05,ef=0", "qsgd:ef=0",
                            "terngrad:ef=0", "fp16"})
    out.emplace_back(extra);
  return out;
}

TensorInfo matrix_info() {
  return TensorInfo{.numel = 37 * 29, .shape = {37, 29}, .tensor_id = 5, .rank = 1};
}

std::vector<float> grad_at(std::size_t n, int step) {
  return testing::normal_vector(n, 1000 + static_cast<std::uint32_t>(step), 0.7f);
}

// One step: encode, or PowerSGD's allreduce scheme (world of one) when the codec has one.
std::vector<std::byte> step(Codec& c, int s) {
  auto g = grad_at(c.info().numel, s);
  std::vector<std::byte> out;
  if (c.custom_allreduce(g, [](std::span<float>) {}, 1)) {
    out.resize(g.size() * sizeof(float));
    std::memcpy(out.data(), g.data(), out.size());
    return out;
  }
  c.encode(g, out);
  return out;
}

std::vector<std::byte> state_of(const Codec& c) {
  std::vector<std::byte> s;
  c.save_state(s);
  return s;
}

TEST(CodecState, EveryCodecResumesBitForBit) {
  for (const auto& spec : specs()) {
    const TensorInfo single{.numel = 1, .tensor_id = 2, .rank = 3};
    for (const TensorInfo& info : {matrix_info(), single}) {
      SCOPED_TRACE(spec + " numel=" + std::to_string(info.numel));
      auto a = make_codec(spec, info);
      for (int s = 0; s < 7; ++s) step(*a, s);
      const auto saved = state_of(*a);
      auto b = make_codec(spec, info);
      b->load_state(saved);
      EXPECT_EQ(state_of(*b), saved);
      auto fresh = make_codec(spec, info);  // never loaded: shows whether the state matters
      bool fresh_differs = false;
      for (int s = 7; s < 12; ++s) {
        const auto pa = step(*a, s);
        const auto pb = step(*b, s);
        ASSERT_EQ(pa, pb) << "step " << s;
        ASSERT_EQ(a->residual().size(), b->residual().size());
        ASSERT_TRUE(a->residual().empty() ||  // memcmp needs non-null pointers
                    std::memcmp(a->residual().data(), b->residual().data(), a->residual().size_bytes()) == 0)
            << "residual differs at step " << s;
        fresh_differs |= step(*fresh, s) != pa;
      }
      // Every codec but the stateless ones (and none+ef, whose residual stays zero) would
      // continue differently without its state, at least on the larger tensor.
      const std::string name = a->name();
      const bool stateful = name != "none" && name != "none+ef" && name != "fp16" && name != "topk";
      if (info.numel > 1 && stateful) {
        EXPECT_TRUE(fresh_differs);
      }
    }
  }
}

TEST(CodecState, StatelessCodecsSaveAHeaderOnly) {
  for (const char* spec : {"none", "fp16", "topk:ratio=0.1,ef=0"}) {
    auto c = make_codec(spec, matrix_info());
    const auto before = state_of(*c);
    step(*c, 0);
    EXPECT_EQ(state_of(*c), before) << spec;
  }
}

// Every proper prefix, a trailing byte, another version, another codec, another tensor size:
// FormatError naming the codec, and the codec keeps its state.
TEST(CodecState, BadBlobsAreFormatErrorsAndChangeNothing) {
  for (const auto& spec : specs()) {
    SCOPED_TRACE(spec);
    const TensorInfo info = matrix_info();
    auto a = make_codec(spec, info);
    for (int s = 0; s < 3; ++s) step(*a, s);
    const auto good = state_of(*a);
    auto b = make_codec(spec, info);
    step(*b, 5);
    const auto b_before = state_of(*b);
    const std::string name = b->name();
    auto expect_refused = [&](std::span<const std::byte> blob, const std::string& what) {
      try {
        b->load_state(blob);
        ADD_FAILURE() << what << ": accepted";
      } catch (const FormatError& e) {
        EXPECT_NE(std::string(e.what()).find("codec state for " + name), std::string::npos)
            << what << ": " << e.what();
      }
      ASSERT_EQ(state_of(*b), b_before) << what << ": the codec changed";
    };
    // Every prefix for small blobs; for large ones (residual vectors) a spread of cut points.
    const std::size_t step_len = good.size() < 400 ? 1 : good.size() / 97 + 1;
    for (std::size_t len = 0; len < good.size(); len += step_len)
      expect_refused(std::span(good).first(len), "truncated to " + std::to_string(len));
    expect_refused(std::span(good).first(good.size() - 1), "one byte short");
    auto longer = good;
    longer.push_back(std::byte{0});
    expect_refused(longer, "trailing byte");
    auto version = good;
    version[3] = std::byte{kCodecStateVersion + 1};
    expect_refused(version, "other version");
    auto magic = good;
    magic[0] = std::byte{'X'};
    expect_refused(magic, "bad magic");
    for (const auto& other : specs()) {
      auto o = make_codec(other, info);
      if (o->name() == name) continue;
      expect_refused(state_of(*o), "state of " + other);
    }
    auto smaller = make_codec(spec, testing::info_1d(10));
    expect_refused(state_of(*smaller), "state of a 10-element tensor");
  }
}

// The error message says what was wrong.
TEST(CodecState, MessagesNameTheMismatch) {
  auto twobit = make_codec("twobit", matrix_info());
  auto qsgd = make_codec("qsgd:ef=1", matrix_info());
  try {
    twobit->load_state(state_of(*qsgd));
    FAIL() << "accepted";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("saved by codec 'qsgd+ef'"), std::string::npos)
        << e.what();
  }
  auto small = make_codec("twobit", testing::info_1d(3));
  try {
    twobit->load_state(state_of(*small));
    FAIL() << "accepted";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("tensor of 3 elements"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ferry::compress
