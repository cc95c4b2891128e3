#include <gtest/gtest.h>

#include "compress/codec_registry.h"
#include "compress/codec_spec.h"
#include "compress/none_codec.h"
#include "compress/powersgd_codec.h"
#include "compress/raw_velocity_codec.h"
#include "compress/topk_codec.h"
#include "core/error.h"
#include "test_util.h"

namespace ferry::compress {
namespace {

using testing::codec;

// Expects `use(spec)` to throw InvalidArgument whose message contains `needle`.
template <typename Use>
void expect_invalid_with(Use use, const std::string& spec, const std::string& needle) {
  try {
    use(spec);
    ADD_FAILURE() << "spec '" << spec << "' was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
        << "spec '" << spec << "': message '" << e.what() << "' lacks '" << needle << "'";
  }
}

// Expects building a codec of `spec` to throw InvalidArgument whose message contains `needle`.
void expect_invalid(const std::string& spec, const std::string& needle, std::size_t n = 100) {
  expect_invalid_with([n](const std::string& s) { codec(s, n); }, spec, needle);
}

TEST(CodecSpec, ParsesNameAndParameters) {
  CodecSpec s = CodecSpec::parse(" TopK : ratio = 0.01 , ef=0");
  EXPECT_EQ(s.name, "topk");
  ASSERT_EQ(s.params.size(), 2u);
  EXPECT_EQ(s.params[0].first, "ratio");
  EXPECT_EQ(s.params[0].second, "0.01");
  EXPECT_EQ(s.params[1].first, "ef");
  EXPECT_EQ(s.params[1].second, "0");
  EXPECT_TRUE(CodecSpec::parse("none").params.empty());
}

TEST(CodecSpec, MalformedSpecsAreRejected) {
  EXPECT_THROW(CodecSpec::parse(""), InvalidArgument);
  EXPECT_THROW(CodecSpec::parse(":ratio=1"), InvalidArgument);
  EXPECT_THROW(CodecSpec::parse("topk:ratio"), InvalidArgument);
  EXPECT_THROW(CodecSpec::parse("topk:=0.1"), InvalidArgument);
  EXPECT_THROW(CodecSpec::parse("topk:ratio="), InvalidArgument);
  EXPECT_THROW(CodecSpec::parse("topk:ratio=0.1,ratio=0.2"), InvalidArgument);
  EXPECT_THROW(CodecSpec::parse("topk:ratio=0.1,"), InvalidArgument);
}

TEST(CodecRegistry, UnknownCodecListsKnownOnes) {
  expect_invalid("fourbit", "unknown codec 'fourbit'");
  expect_invalid("fourbit", "twobit");
  expect_invalid("fourbit", "powersgd");
}

TEST(CodecRegistry, UnknownOptionListsKnownKeys) {
  expect_invalid("topk:ration=0.1", "unknown option 'ration'");
  expect_invalid("topk:ration=0.1", "ratio");
  expect_invalid("none:threshold=1", "unknown option 'threshold'");
}

TEST(CodecRegistry, BadValuesAreRejected) {
  expect_invalid("twobit:threshold=abc", "not a finite number");
  expect_invalid("twobit:threshold=0", "threshold must be");
  expect_invalid("twobit:threshold=-0.5", "threshold must be");
  expect_invalid("twobit:threshold=inf", "not a finite number");
  expect_invalid("topk:ratio=0", "ratio must be in (0, 1]");
  expect_invalid("topk:ratio=1.5", "ratio must be in (0, 1]");
  expect_invalid("randomk:ratio=-0.1", "ratio must be in (0, 1]");
  expect_invalid("dgc:ratio=2", "ratio must be in (0, 1]");
  expect_invalid("dgc:momentum=1", "momentum must be in [0, 1)");
  expect_invalid("dgc:clip=-1", "clip must be at least 0");
  expect_invalid("powersgd:rank=0", "rank must be in [1, 1024]");
  expect_invalid("powersgd:rank=2.5", "not an integer");
  expect_invalid("powersgd:min_rate=0.5", "min_rate must be at least 1");
  expect_invalid("qsgd:levels=0", "levels must be in [1, 65535]");
  expect_invalid("qsgd:bucket=0", "bucket must be in");
  expect_invalid("qsgd:seed=-1", "not a non-negative integer");
  expect_invalid("topk:ef=maybe", "not a boolean");
  expect_invalid("twobit:ef=0", "error feedback built in");
}

TEST(CodecRegistry, ErrorFeedbackDefaultsPerCodec) {
  EXPECT_EQ(codec("topk:ratio=0.1", 100)->name(), "topk+ef");
  EXPECT_EQ(codec("topk:ratio=0.1,ef=0", 100)->name(), "topk");
  EXPECT_EQ(codec("randomk", 100)->name(), "randomk+ef");
  EXPECT_EQ(codec("qsgd", 100)->name(), "qsgd");
  EXPECT_EQ(codec("qsgd:ef=1", 100)->name(), "qsgd+ef");
  EXPECT_EQ(codec("fp16:ef=on", 100)->name(), "fp16+ef");
  EXPECT_EQ(codec("twobit", 100)->name(), "twobit");
  EXPECT_EQ(codec("twobit:ef=1", 100)->name(), "twobit");  // built in: accepted, no wrapper
  EXPECT_EQ(codec("dgc:ef=1", 100)->name(), "dgc");
}

TEST(CodecRegistry, CanonicalSpecResolvesDefaults) {
  // Codecs with error feedback whose entry moves the momentum name where it acts.
  EXPECT_EQ(canonical_codec_spec("twobit"), "twobit:threshold=0.5,momentum_at=worker,raw_1d=1");
  EXPECT_EQ(canonical_codec_spec("topk"), "topk:ratio=0.01,ef=1,momentum_at=worker,raw_1d=1");
  EXPECT_EQ(canonical_codec_spec("topk:momentum_at=server"), "topk:ratio=0.01,ef=1,momentum_at=server,raw_1d=1");
  EXPECT_EQ(canonical_codec_spec("qsgd:seed=7,levels=3"),
            "qsgd:levels=3,bucket=128,seed=7,ef=0,raw_1d=1");
  EXPECT_EQ(canonical_codec_spec("none"), "none:ef=0");
  EXPECT_EQ(canonical_codec_spec("powersgd"), "powersgd:rank=4,min_rate=2,warmup=0,seed=0,raw_1d=1");
  EXPECT_THROW(canonical_codec_spec("topk:ratio=7"), InvalidArgument);
  // Without error feedback there is no choice to make, so the key is unknown there.
  EXPECT_THROW(canonical_codec_spec("qsgd:momentum_at=worker"), InvalidArgument);
  EXPECT_THROW(canonical_codec_spec("twobit:momentum_at=client"), InvalidArgument);
}

// Where the optimizer's momentum acts, per codec: the registry entry's capability, chosen only
// with error feedback on, overridden by momentum_at=server.
TEST(CodecRegistry, MomentumPlacementIsTheEntrysCapability) {
  using P = MomentumPlacement;
  for (const char* spec : {"twobit", "onebit", "fp16:ef=1", "qsgd:ef=1", "terngrad:ef=1", "none:ef=1"}) {
    EXPECT_EQ(codec_momentum(spec).placement, P::kWorker) << spec;
    EXPECT_FALSE(codec_momentum(spec).mask_sent) << spec;
  }
  for (const char* spec : {"topk", "randomk", "randomk:ef21=0"}) {
    EXPECT_EQ(codec_momentum(spec).placement, P::kWorker) << spec;
    EXPECT_TRUE(codec_momentum(spec).mask_sent) << spec;
    EXPECT_FALSE(codec_momentum(spec).increments) << spec;
  }
  // EF21, on request, for any codec that codes the velocity; no masking.
  for (const char* spec : {"randomk:ef21=1", "topk:ef21=1", "twobit:ef21=1", "qsgd:ef=1,ef21=1"}) {
    EXPECT_EQ(codec_momentum(spec).placement, P::kWorker) << spec;
    EXPECT_TRUE(codec_momentum(spec).increments) << spec;
    EXPECT_FALSE(codec_momentum(spec).mask_sent) << spec;
  }
  EXPECT_EQ(canonical_codec_spec("randomk:ef21=1"), "randomk:ratio=0.01,seed=0,ef=1,momentum_at=worker,ef21=1,raw_1d=1");
  EXPECT_EQ(canonical_codec_spec("randomk"), "randomk:ratio=0.01,seed=0,ef=1,momentum_at=worker,raw_1d=1");
  // Where there is no worker velocity to code, ef21 is refused, saying why.
  for (const auto& [spec, why] : std::vector<std::pair<const char*, const char*>>{
           {"fp16:ef21=1", "error feedback is off"},
           {"twobit:momentum_at=server,ef21=1", "momentum_at=server"},
           {"dgc:ef21=1", "keeps the momentum"},
           {"powersgd:ef21=0", "keeps the momentum"}}) {
    expect_invalid(spec, "ef21 needs");
    expect_invalid(spec, why);
  }
  EXPECT_EQ(codec_momentum("dgc:momentum=0.75").placement, P::kInCodec);
  EXPECT_EQ(codec_momentum("dgc:momentum=0.75").codec_momentum, 0.75);
  for (const char* spec : {"none", "fp16", "qsgd", "terngrad", "topk:ef=0", "powersgd", "twobit:momentum_at=server",
                           "topk:momentum_at=server", "dgc:momentum_at=server"})
    EXPECT_EQ(codec_momentum(spec).placement, P::kAggregate) << spec;
}

// For a caller that applies the momentum after the codec (the DDP hook): the spec resolves to the
// aggregate placement, and asking for the workers' momentum is refused naming the key.
TEST(CodecRegistry, OnAggregateSpecPutsTheMomentumAfterTheCodec) {
  EXPECT_EQ(canonical_codec_spec_on_aggregate("twobit"), "twobit:threshold=0.5,momentum_at=server,raw_1d=1");
  EXPECT_EQ(canonical_codec_spec_on_aggregate("randomk:ratio=0.05,ef21=0"),
            "randomk:ratio=0.05,seed=0,ef=1,momentum_at=server,raw_1d=1");
  EXPECT_EQ(canonical_codec_spec_on_aggregate("dgc"), canonical_codec_spec("dgc:momentum_at=server"));
  for (const char* spec : {"fp16", "powersgd", "topk:momentum_at=server"})  // already on the aggregate
    EXPECT_EQ(canonical_codec_spec_on_aggregate(spec), canonical_codec_spec(spec)) << spec;
  const auto on_aggregate = [](const std::string& s) { canonical_codec_spec_on_aggregate(s); };
  expect_invalid_with(on_aggregate, "topk:momentum_at=worker", "momentum_at=worker: here the momentum");
  expect_invalid_with(on_aggregate, "randomk:ef21=1", "ef21=1: here the momentum");
  expect_invalid_with(on_aggregate, "twobit:threshold=-1", "threshold must be");
}

// The mask of the sparsifiers zeroes exactly the indices a payload sent.
TEST(CodecRegistry, SparseMaskZeroesTheSentIndices) {
  auto codec = make_codec("topk:ratio=0.25", TensorInfo{.numel = 8});
  std::vector<std::byte> payload;
  codec->encode(std::vector<float>{0.5f, -4, 1, 0, 3, -0.25f, 0.125f, 2}, payload);  // top 2: -4 (1), 3 (4)
  std::vector<float> u(8, 1.0f);
  codec_momentum("topk:ratio=0.25").mask_sent(payload, u);
  EXPECT_EQ(u, (std::vector<float>{1, 0, 1, 1, 0, 1, 1, 1}));
  std::vector<float> wrong(7, 1.0f);
  EXPECT_THROW(codec_momentum("topk").mask_sent(payload, wrong), FormatError);
}

// A whole 1-D parameter (param_ndim 1: a bias, a norm's scale) is sent raw by every codec unless
// raw_1d=0: the payload is NoneCodec's, bit for bit; a piece of a tensor (param_ndim 0) or a
// matrix is compressed as before.
TEST(CodecRegistry, OneDimensionalParametersTravelRaw) {
  const std::vector<float> g = {0.5f, -4, 1, 0, 3, -0.25f, 0.125f, 2};
  std::vector<std::byte> expected;
  NoneCodec(TensorInfo{.numel = 8}).encode(g, expected);
  for (const char* spec : {"fp16", "twobit", "twobit:threshold=2,units=rms", "onebit", "qsgd", "terngrad", "topk",
                           "randomk", "powersgd", "dgc:momentum_at=server", "topk:momentum_at=server"}) {
    auto raw = make_codec(spec, TensorInfo{.numel = 8, .param_ndim = 1});
    EXPECT_EQ(raw->name(), "none") << spec;
    std::vector<std::byte> payload;
    for (int step = 0; step < 3; ++step) {  // no residual: every step sends exactly g
      raw->encode(g, payload);
      EXPECT_EQ(payload, expected) << spec << " step " << step;
    }
    const std::string s(spec);
    const std::string no_raw = s + (s.find(':') == std::string::npos ? ":" : ",") + "raw_1d=0";
    EXPECT_NE(make_codec(no_raw, TensorInfo{.numel = 8, .param_ndim = 1})->name(), "none")
        << spec;
    EXPECT_NE(make_codec(spec, TensorInfo{.numel = 8})->name(), "none") << spec;  // a piece, or unknown
    EXPECT_NE(make_codec(spec, TensorInfo{.numel = 8, .shape = {2, 4}, .param_ndim = 2})->name(), "none") << spec;
  }
  EXPECT_EQ(canonical_codec_spec("twobit:raw_1d=0"), "twobit:threshold=0.5,momentum_at=worker,raw_1d=0");
  EXPECT_EQ(canonical_codec_spec("none"), "none:ef=0");  // nothing to leave raw
  EXPECT_THROW(canonical_codec_spec("none:raw_1d=1"), InvalidArgument);
  // A raw payload masks nothing: the velocity of a raw tensor is plain momentum.
  std::vector<float> u(8, 1.0f);
  codec_momentum("topk").mask_sent(expected, u);
  EXPECT_EQ(u, std::vector<float>(8, 1.0f));
}

// DGC keeps the momentum itself, so its raw 1-D tensors send the velocity u <- m u + g, resumed
// exactly from a checkpoint. Hand-checked with m = 0.5: u1 = g1, u2 = 0.5 g1 + g2.
TEST(CodecRegistry, DgcSendsTheVelocityOfItsRawTensors) {
  const TensorInfo info{.numel = 3, .param_ndim = 1};
  auto dgc = make_codec("dgc:momentum=0.5", info);
  EXPECT_EQ(dgc->name(), "none+velocity");
  const std::vector<float> g1 = {1, -2, 0.25f}, g2 = {0.5f, 4, -1};
  std::vector<std::byte> payload;
  std::vector<float> out(3);
  dgc->encode(g1, payload);
  dgc->decode(payload, out);
  EXPECT_EQ(out, g1);
  std::vector<std::byte> state;
  dgc->save_state(state);
  dgc->encode(g2, payload);
  dgc->decode(payload, out);
  EXPECT_EQ(out, (std::vector<float>{1, 3, -0.875f}));
  std::vector<std::byte> resumed_payload;
  auto resumed = make_codec("dgc:momentum=0.5", info);
  resumed->load_state(state);
  resumed->encode(g2, resumed_payload);
  EXPECT_EQ(resumed_payload, payload);
  EXPECT_THROW(make_codec("topk", info)->load_state(state), FormatError);  // another codec's state
}

TEST(CodecRegistry, EveryBuiltinIsListedAndBuilds) {
  const auto names = builtin_codec_registry().names();
  const std::vector<std::string> expected = {"dgc",      "fp16", "none",    "onebit", "powersgd",
                                             "qsgd",     "randomk", "terngrad", "topk", "twobit"};
  EXPECT_EQ(names, expected);
  for (const auto& n : names) {
    auto c = make_codec(n, TensorInfo{.numel = 12, .shape = {3, 4}});
    EXPECT_EQ(c->info().numel, 12u) << n;
  }
}

TEST(CodecRegistry, CustomRegistryAndDuplicates) {
  CodecRegistry r;
  register_builtin_codecs(r);
  EXPECT_THROW(register_builtin_codecs(r), InvalidArgument);
  auto c = r.make("topk:ratio=0.5,ef=0", testing::info_1d(10));
  EXPECT_EQ(dynamic_cast<TopkCodec*>(c.get())->k(), 5u);
}

TEST(CodecRegistry, TensorInfoIsChecked) {
  EXPECT_THROW(make_codec("none", TensorInfo{.numel = 0}), InvalidArgument);
  EXPECT_THROW(make_codec("none", TensorInfo{.numel = 6, .shape = {2, 2}}), InvalidArgument);
  EXPECT_THROW(make_codec("none", TensorInfo{.numel = 4, .shape = {4, -1}}), InvalidArgument);
  auto c = make_codec("none", TensorInfo{.numel = 4});
  std::vector<float> wrong(5);
  std::vector<std::byte> out;
  EXPECT_THROW(c->encode(wrong, out), InvalidArgument);
}

}  // namespace
}  // namespace ferry::compress
