#include "compress/codec_registry.h"

#include <algorithm>

#include "compress/dgc_codec.h"
#include "compress/error_feedback_codec.h"
#include "compress/fp16_codec.h"
#include "compress/none_codec.h"
#include "compress/onebit_codec.h"
#include "compress/powersgd_codec.h"
#include "compress/qsgd_codec.h"
#include "compress/randomk_codec.h"
#include "compress/terngrad_codec.h"
#include "compress/topk_codec.h"
#include "compress/twobit_codec.h"
#include "core/error.h"

namespace ferry::compress {

void CodecRegistry::add(CodecEntry entry) {
  FERRY_CHECK(entry.make != nullptr, "codec '", entry.name, "' has no factory");
  Registry<CodecEntry>::add(std::move(entry));
}

namespace {

struct Built {
  std::unique_ptr<Codec> codec;
  std::string canonical;
};

Built build(const CodecRegistry& registry, std::string_view text, const TensorInfo& info) {
  auto [entry, reader] = registry.parse(text);
  std::unique_ptr<Codec> codec = entry->make(reader, info);
  bool ef = false;
  switch (entry->feedback) {
    case FeedbackMode::kOptional:
      ef = reader.get_bool("ef", false);
      break;
    case FeedbackMode::kDefaultOn:
      ef = reader.get_bool("ef", true);
      break;
    case FeedbackMode::kBuiltIn:
      if (reader.has("ef"))
        FERRY_REQUIRE(reader.get_bool("ef", true), "codec '", entry->name,
                      "' has error feedback built in; ef=0 is not supported");
      break;
  }
  reader.finish();
  if (ef) codec = with_error_feedback(std::move(codec));
  return {std::move(codec), reader.canonical()};
}

}  // namespace

std::unique_ptr<Codec> CodecRegistry::make(std::string_view spec, const TensorInfo& info) const {
  return build(*this, spec, info).codec;
}

std::string CodecRegistry::canonical(std::string_view spec) const {
  // A 2 x 2 tensor is enough to run every factory's checks.
  TensorInfo probe{.numel = 4, .shape = {2, 2}};
  return build(*this, spec, probe).canonical;
}

void register_builtin_codecs(CodecRegistry& registry) {
  registry.add({"none", "no compression (fp32)", FeedbackMode::kOptional,
                [](SpecReader&, const TensorInfo& info) -> std::unique_ptr<Codec> {
                  return std::make_unique<NoneCodec>(info);
                }});
  registry.add({"fp16", "IEEE half precision, round to nearest even", FeedbackMode::kOptional,
                [](SpecReader&, const TensorInfo& info) -> std::unique_ptr<Codec> {
                  return std::make_unique<Fp16Codec>(info);
                }});
  registry.add({"twobit", "MXNet 2-bit quantisation with residual (threshold)",
                FeedbackMode::kBuiltIn,
                [](SpecReader& s, const TensorInfo& info) -> std::unique_ptr<Codec> {
                  return std::make_unique<TwobitCodec>(parse_twobit_options(s), info);
                }});
  registry.add({"onebit", "EF-signSGD: sign bits scaled by mean magnitude", FeedbackMode::kBuiltIn,
                [](SpecReader&, const TensorInfo& info) -> std::unique_ptr<Codec> {
                  return std::make_unique<OnebitCodec>(info);
                }});
  registry.add({"qsgd", "QSGD stochastic quantisation (levels, bucket, seed)",
                FeedbackMode::kOptional,
                [](SpecReader& s, const TensorInfo& info) -> std::unique_ptr<Codec> {
                  return std::make_unique<QsgdCodec>(parse_qsgd_options(s), info);
                }});
  registry.add({"terngrad", "TernGrad stochastic ternarisation (seed)", FeedbackMode::kOptional,
                [](SpecReader& s, const TensorInfo& info) -> std::unique_ptr<Codec> {
                  return std::make_unique<TerngradCodec>(parse_terngrad_options(s), info);
                }});
  registry.add({"topk", "top-k sparsification (ratio), error feedback on by default",
                FeedbackMode::kDefaultOn,
                [](SpecReader& s, const TensorInfo& info) -> std::unique_ptr<Codec> {
                  return std::make_unique<TopkCodec>(parse_topk_options(s), info);
                }});
  registry.add({"randomk", "random-k sparsification (ratio, seed), error feedback on by default",
                FeedbackMode::kDefaultOn,
                [](SpecReader& s, const TensorInfo& info) -> std::unique_ptr<Codec> {
                  return std::make_unique<RandomkCodec>(parse_randomk_options(s), info);
                }});
  registry.add({"dgc", "Deep Gradient Compression (ratio, momentum, clip, warmup)",
                FeedbackMode::kBuiltIn,
                [](SpecReader& s, const TensorInfo& info) -> std::unique_ptr<Codec> {
                  return std::make_unique<DgcCodec>(parse_dgc_options(s), info);
                },
                "it applies momentum"});
  registry.add({"powersgd", "PowerSGD rank-r low-rank compression (rank, min_rate, warmup, seed)",
                FeedbackMode::kBuiltIn,
                [](SpecReader& s, const TensorInfo& info) -> std::unique_ptr<Codec> {
                  return std::make_unique<PowersgdCodec>(parse_powersgd_options(s), info);
                },
                "it allreduces its factors"});
}

const CodecRegistry& builtin_codec_registry() {
  // Built on first use; C++ guarantees one thread runs the initialiser.
  static const CodecRegistry& registry = *[] {
    static CodecRegistry r;
    register_builtin_codecs(r);
    return &r;
  }();
  return registry;
}

std::unique_ptr<Codec> make_codec(std::string_view spec, const TensorInfo& info) {
  return builtin_codec_registry().make(spec, info);
}

std::string canonical_codec_spec(std::string_view spec) {
  return builtin_codec_registry().canonical(spec);
}

std::vector<std::string> codec_names() { return builtin_codec_registry().names(); }

}  // namespace ferry::compress
