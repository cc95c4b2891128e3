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
#include "compress/raw_velocity_codec.h"
#include "compress/sparse_payload.h"
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
  CodecMomentum momentum;
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
  if (entry->feedback == FeedbackMode::kBuiltIn) ef = true;
  CodecMomentum momentum;
  if (ef && entry->momentum_with_feedback != MomentumPlacement::kAggregate) {
    // Read only where there is a choice, so that codecs without error feedback keep their spec.
    const bool worker = reader.get_choice("momentum_at", "worker", {"worker", "server"}) == "worker";
    if (worker) {
      momentum.placement = entry->momentum_with_feedback;
      momentum.mask_sent = entry->mask_sent;
    }
    // EF21 on request (measured worse than classic error feedback at the user's learning rate:
    // docs/compression.md); read only where given, so that the canonical specs read as before.
    if (momentum.placement == MomentumPlacement::kWorker && reader.has("ef21") && reader.get_bool("ef21", false)) {
      momentum.increments = true;
      momentum.mask_sent = {};  // the velocity stays the optimizer's; its increments are coded
    }
  }
  if (reader.has("ef21") && momentum.placement != MomentumPlacement::kWorker) {
    const char* why = !ef ? "error feedback is off"
                      : entry->momentum_with_feedback == MomentumPlacement::kWorker
                          ? "momentum_at=server is given"
                          : "this codec keeps the momentum in itself or on the aggregate";
    FERRY_THROW(InvalidArgument, "codec '", entry->name, "': ef21 needs error feedback with the momentum on the worker (",
                why, ")");
  }
  // 1-D parameters (biases, normalisation scales and shifts) travel raw, as in DGC's and
  // PowerSGD's implementations: they are a sliver of the bytes, and a sparsifier's k of a
  // 16-element scale is one value.
  const bool raw_1d = !entry->identity && reader.get_bool("raw_1d", true);
  reader.finish();
  if (momentum.placement == MomentumPlacement::kInCodec) {
    // The codec's own momentum, as its factory resolved it (the canonical spec holds it).
    SpecReader resolved(CodecSpec::parse(reader.canonical(), "codec"), "codec");
    momentum.codec_momentum = resolved.get_double(entry->momentum_key, 0.0);
  }
  if (raw_1d && info.param_ndim == 1) {
    // Lossless, so no residual: with the momentum on the worker (or the aggregate) this tensor
    // trains as plain momentum SGD; a codec that keeps the momentum itself sends the velocity.
    if (momentum.placement == MomentumPlacement::kInCodec)
      codec = std::make_unique<RawVelocityCodec>(info, static_cast<float>(momentum.codec_momentum));
    else
      codec = std::make_unique<NoneCodec>(info);
  } else if (ef && entry->feedback != FeedbackMode::kBuiltIn) {
    codec = with_error_feedback(std::move(codec));
  }
  return {std::move(codec), reader.canonical(), std::move(momentum)};
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

CodecMomentum CodecRegistry::momentum(std::string_view spec) const {
  TensorInfo probe{.numel = 4, .shape = {2, 2}};
  return build(*this, spec, probe).momentum;
}

namespace {
// Momentum factor masking for the sparse wire format (sparse_payload.h): the sent indices.
// A raw payload (a 1-D parameter, raw_1d) masks nothing: its velocity is plain momentum.
void mask_sparse_sent(std::span<const std::byte> payload, std::span<float> velocity) {
  if (payload.size() >= kHeaderBytes && payload[1] == static_cast<std::byte>(CodecId::kNone)) return;
  for (std::uint32_t i : sparse_indices(payload, velocity.size())) velocity[i] = 0.0f;
}
}  // namespace

void register_builtin_codecs(CodecRegistry& registry) {
  // Momentum with error feedback, per codec (docs/compression.md, "Momentum with error feedback"):
  //  - quantisers (none, fp16, twobit, onebit, qsgd, terngrad): worker momentum, the velocity
  //    compressed with error feedback (Zheng, Huang, Kwok, "Communication-Efficient Distributed
  //    Blockwise Momentum SGD with Error-Feedback", NeurIPS 2019, dist-EF-SGDM);
  //  - sparsifiers (topk, randomk): DGC's momentum correction with momentum factor masking (Lin
  //    et al., "Deep Gradient Compression", ICLR 2018, Sec. 3.2);
  //  - dgc: both inside the codec;
  //  - powersgd: momentum on the decompressed aggregate (Vogels et al., PowerSGD, NeurIPS 2019,
  //    Algorithm 2), as without a codec.
  constexpr auto kWorker = MomentumPlacement::kWorker;
  registry.add({.name = "none", .summary = "no compression (fp32)", .feedback = FeedbackMode::kOptional,
                .make = [](SpecReader&, const TensorInfo& info) -> std::unique_ptr<Codec> {
                  return std::make_unique<NoneCodec>(info);
                },
                .momentum_with_feedback = kWorker, .identity = true});
  registry.add({.name = "fp16", .summary = "IEEE half precision, round to nearest even",
                .feedback = FeedbackMode::kOptional,
                .make = [](SpecReader&, const TensorInfo& info) -> std::unique_ptr<Codec> {
                  return std::make_unique<Fp16Codec>(info);
                },
                .momentum_with_feedback = kWorker});
  registry.add({.name = "twobit", .summary = "MXNet 2-bit quantisation with residual (threshold, units)",
                .feedback = FeedbackMode::kBuiltIn,
                .make = [](SpecReader& s, const TensorInfo& info) -> std::unique_ptr<Codec> {
                  return std::make_unique<TwobitCodec>(parse_twobit_options(s), info);
                },
                .momentum_with_feedback = kWorker});
  registry.add({.name = "onebit", .summary = "EF-signSGD: sign bits scaled by mean magnitude",
                .feedback = FeedbackMode::kBuiltIn,
                .make = [](SpecReader&, const TensorInfo& info) -> std::unique_ptr<Codec> {
                  return std::make_unique<OnebitCodec>(info);
                },
                .momentum_with_feedback = kWorker});
  registry.add({.name = "qsgd", .summary = "QSGD stochastic quantisation (levels, bucket, seed)",
                .feedback = FeedbackMode::kOptional,
                .make = [](SpecReader& s, const TensorInfo& info) -> std::unique_ptr<Codec> {
                  return std::make_unique<QsgdCodec>(parse_qsgd_options(s), info);
                },
                .momentum_with_feedback = kWorker});
  registry.add({.name = "terngrad", .summary = "TernGrad stochastic ternarisation (seed)",
                .feedback = FeedbackMode::kOptional,
                .make = [](SpecReader& s, const TensorInfo& info) -> std::unique_ptr<Codec> {
                  return std::make_unique<TerngradCodec>(parse_terngrad_options(s), info);
                },
                .momentum_with_feedback = kWorker});
  registry.add({.name = "topk", .summary = "top-k sparsification (ratio), error feedback on by default",
                .feedback = FeedbackMode::kDefaultOn,
                .make = [](SpecReader& s, const TensorInfo& info) -> std::unique_ptr<Codec> {
                  return std::make_unique<TopkCodec>(parse_topk_options(s), info);
                },
                .momentum_with_feedback = kWorker, .mask_sent = mask_sparse_sent});
  registry.add({.name = "randomk", .summary = "random-k sparsification (ratio, seed), error feedback on by default",
                .feedback = FeedbackMode::kDefaultOn,
                .make = [](SpecReader& s, const TensorInfo& info) -> std::unique_ptr<Codec> {
                  return std::make_unique<RandomkCodec>(parse_randomk_options(s), info);
                },
                .momentum_with_feedback = kWorker, .mask_sent = mask_sparse_sent});
  registry.add({.name = "dgc", .summary = "Deep Gradient Compression (ratio, momentum, clip, warmup)",
                .feedback = FeedbackMode::kBuiltIn,
                .make = [](SpecReader& s, const TensorInfo& info) -> std::unique_ptr<Codec> {
                  return std::make_unique<DgcCodec>(parse_dgc_options(s), info);
                },
                .pull_unsupported = "it applies momentum",
                .momentum_with_feedback = MomentumPlacement::kInCodec, .momentum_key = "momentum"});
  registry.add({.name = "powersgd", .summary = "PowerSGD rank-r low-rank compression (rank, min_rate, warmup, seed)",
                .feedback = FeedbackMode::kBuiltIn,
                .make = [](SpecReader& s, const TensorInfo& info) -> std::unique_ptr<Codec> {
                  return std::make_unique<PowersgdCodec>(parse_powersgd_options(s), info);
                },
                .pull_unsupported = "it allreduces its factors"});
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

CodecMomentum codec_momentum(std::string_view spec) { return builtin_codec_registry().momentum(spec); }

std::string canonical_codec_spec_on_aggregate(std::string_view text) {
  const CodecRegistry& registry = builtin_codec_registry();
  const std::string canonical = registry.canonical(text);  // validates
  if (registry.momentum(canonical).placement == MomentumPlacement::kAggregate) return canonical;
  // The placement is the entry's default or what the spec asked for: refuse the latter.
  Spec spec = Spec::parse(text, "codec");
  for (const auto& [key, value] : spec.params) {
    const bool asked = key == "ef21" ? registry.momentum(text).increments : key == "momentum_at";
    FERRY_REQUIRE(!asked, key, "=", value,
                  ": here the momentum is applied after the codec (momentum_at=server); the workers' momentum "
                  "needs a caller that keeps their velocity (ferry train, DistributedOptimizer)");
  }
  std::erase_if(spec.params, [](const auto& kv) { return kv.first == "ef21"; });  // ef21=0: nothing to drop to
  spec.params.emplace_back("momentum_at", "server");
  return registry.canonical(spec.str());
}

const CodecEntry& codec_entry(std::string_view spec) {
  return builtin_codec_registry().at(Spec::parse(spec, "codec").name);
}

std::vector<std::string> codec_names() { return builtin_codec_registry().names(); }

}  // namespace ferry::compress
