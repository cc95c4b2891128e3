// Codecs chosen by name: a registry of factories, filled explicitly by register_builtin_codecs(),
// and make_codec(spec, tensor) to build one codec instance per tensor from a spec string.
//
// Error feedback (residual memory, ErrorFeedbackCodec) is selected with the `ef` option:
//   - optional codecs (none, fp16, qsgd, terngrad): ef=0 by default, ef=1 wraps them;
//   - sparsifiers (topk, randomk): ef=1 by default, ef=0 gives the plain sparsifier;
//   - codecs whose definition contains a residual (twobit, onebit, dgc, powersgd): always on;
//     ef=1 is accepted (so "every codec with ef=1" specs work), ef=0 is an InvalidArgument.
// With error feedback on, the key momentum_at=worker|server says where the optimizer's momentum
// acts (MomentumPlacement); its default is the entry's momentum_with_feedback, and it is part
// of the canonical spec of every codec with error feedback whose entry moves the momentum.
// With the momentum on the worker, ef21=0|1 chooses what is compressed: the velocity (0, the
// default: classic error feedback) or its increments (1, EF21); the key shows in the canonical
// spec only where it is given.
// Every codec but none reads raw_1d (default 1): a tensor that is a whole 1-D parameter
// (TensorInfo::param_ndim == 1: a bias, a norm's scale or shift) is then sent raw fp32, with the
// momentum where the spec puts it (RawVelocityCodec for a codec that keeps its own); raw_1d=0
// compresses it like the rest.
#pragma once

#include <span>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "compress/codec.h"
#include "compress/codec_spec.h"
#include "core/registry.h"

namespace ferry::compress {

enum class FeedbackMode { kOptional, kDefaultOn, kBuiltIn };

// Where the optimizer's momentum (and weight decay) acts when a codec with error feedback
// carries the gradients (docs/compression.md, "Momentum with error feedback").
//   kAggregate: on the aggregate of the decoded payloads, as without a codec (the server's
//     optimizer on the PS, every worker's after the allreduce).
//   kWorker: momentum correction. Each worker keeps u <- m u + (g + wd w) and the codec
//     compresses u with its error feedback; the aggregate is applied as w <- w - lr mean(decoded)
//     with no momentum or weight decay of its own.
//   kInCodec: the codec keeps the momentum itself (DGC); the worker adds wd w, the aggregate is
//     applied as for kWorker, and the optimizer's momentum must be 0 or equal the codec's.
enum class MomentumPlacement { kAggregate, kWorker, kInCodec };

// Zeroes `velocity` (one tensor's) at the coordinates `payload` sent: momentum factor masking.
using MomentumMaskFn = std::function<void(std::span<const std::byte> payload, std::span<float> velocity)>;

struct CodecEntry {
  std::string name;                             // spec name, lower case
  std::string summary;                          // one line for help texts
  FeedbackMode feedback = FeedbackMode::kOptional;
  // Reads the codec's options from `spec` (via its getters) and builds it for `info`.
  std::function<std::unique_ptr<Codec>(SpecReader& spec, const TensorInfo& info)> make;
  // Why it cannot encode the servers' pull replies (weight changes, --compress-pull), e.g.
  // "applies momentum"; empty: it can.
  std::string pull_unsupported = {};
  // Where the optimizer's momentum acts when error feedback is on (off: always kAggregate);
  // the spec key momentum_at=server selects kAggregate instead (the behaviour before).
  MomentumPlacement momentum_with_feedback = MomentumPlacement::kAggregate;
  // kWorker: momentum factor masking after each encode (DGC's); empty: none.
  MomentumMaskFn mask_sent = {};
  // kInCodec: the spec key holding the codec's own momentum ("momentum").
  std::string momentum_key = {};
  // The payload is the fp32 tensor itself (none): a caller may sum the raw tensors instead of
  // exchanging payloads (the DDP hook allreduces the bucket), and raw_1d has nothing to do.
  bool identity = false;
};

// What a codec spec asks of the optimizer (CodecRegistry::momentum).
struct CodecMomentum {
  MomentumPlacement placement = MomentumPlacement::kAggregate;
  MomentumMaskFn mask_sent = {};  // kWorker with masking
  double codec_momentum = 0;      // kInCodec: the codec's own momentum
  // kWorker, EF21 (Richtarik, Sokolov, Fatkhullin, NeurIPS 2021; with momentum: Fatkhullin,
  // Tyurin, Richtarik, NeurIPS 2023): the codec carries the increments of the worker's velocity
  // and the aggregate integrates them (train/worker_momentum.h).
  bool increments = false;
};

// The core registry (core/registry.h: add, find, at, names, entries) with the codec's own build
// step, which applies the `ef` option.
class CodecRegistry : public Registry<CodecEntry> {
 public:
  CodecRegistry() : Registry<CodecEntry>("codec") {}
  // Throws InvalidArgument if the name is already registered.
  void add(CodecEntry entry);

  // Parses `spec`, builds the codec (wrapped in ErrorFeedbackCodec when ef is on) and checks
  // that every option was known. InvalidArgument on an unknown codec (listing the known ones),
  // an unknown option, a malformed or out-of-range value.
  std::unique_ptr<Codec> make(std::string_view spec, const TensorInfo& info) const;
  // The spec with every option resolved ("topk" -> "topk:ratio=0.01,seed=0,ef=1"); validates.
  std::string canonical(std::string_view spec) const;
  // Where the optimizer's momentum acts with this spec: the entry's momentum_with_feedback when
  // error feedback is on and the spec does not say momentum_at=server, else kAggregate.
  CodecMomentum momentum(std::string_view spec) const;
};

// Adds none, fp16, twobit, onebit, qsgd, terngrad, topk, randomk, dgc and powersgd.
void register_builtin_codecs(CodecRegistry& registry);

// A registry holding the builtin codecs, built (once, thread-safely) on first use.
const CodecRegistry& builtin_codec_registry();

// make_codec / canonical_codec_spec against builtin_codec_registry().
std::unique_ptr<Codec> make_codec(std::string_view spec, const TensorInfo& info);
std::string canonical_codec_spec(std::string_view spec);
CodecMomentum codec_momentum(std::string_view spec);
// The canonical spec with the optimizer's momentum on the aggregate (momentum_at=server where the
// codec has the key), for a caller that applies the momentum after the codec itself (the DDP
// hook, whose torch optimizer steps on the decoded average). InvalidArgument, naming the key,
// when the spec asks for the momentum on the worker (momentum_at=worker, ef21=1).
std::string canonical_codec_spec_on_aggregate(std::string_view spec);
// The registry entry of the codec `spec` names (its capabilities); InvalidArgument for an
// unknown codec or a malformed spec.
const CodecEntry& codec_entry(std::string_view spec);
// The builtin codecs' names, sorted (for help texts).
std::vector<std::string> codec_names();

}  // namespace ferry::compress
