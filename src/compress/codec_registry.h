// Codecs chosen by name: a registry of factories, filled explicitly by register_builtin_codecs(),
// and make_codec(spec, tensor) to build one codec instance per tensor from a spec string.
//
// Error feedback (residual memory, ErrorFeedbackCodec) is selected with the `ef` option:
//   - optional codecs (none, fp16, qsgd, terngrad): ef=0 by default, ef=1 wraps them;
//   - sparsifiers (topk, randomk): ef=1 by default, ef=0 gives the plain sparsifier;
//   - codecs whose definition contains a residual (twobit, onebit, dgc, powersgd): always on;
//     ef=1 is accepted (so "every codec with ef=1" specs work), ef=0 is an InvalidArgument.
#pragma once

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

struct CodecEntry {
  std::string name;                             // spec name, lower case
  std::string summary;                          // one line for help texts
  FeedbackMode feedback = FeedbackMode::kOptional;
  // Reads the codec's options from `spec` (via its getters) and builds it for `info`.
  std::function<std::unique_ptr<Codec>(SpecReader& spec, const TensorInfo& info)> make;
  // Why it cannot encode the servers' pull replies (weight changes, --compress-pull), e.g.
  // "applies momentum"; empty: it can.
  std::string pull_unsupported = {};
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
};

// Adds none, fp16, twobit, onebit, qsgd, terngrad, topk, randomk, dgc and powersgd.
void register_builtin_codecs(CodecRegistry& registry);

// A registry holding the builtin codecs, built (once, thread-safely) on first use.
const CodecRegistry& builtin_codec_registry();

// make_codec / canonical_codec_spec against builtin_codec_registry().
std::unique_ptr<Codec> make_codec(std::string_view spec, const TensorInfo& info);
std::string canonical_codec_spec(std::string_view spec);
// The builtin codecs' names, sorted (for help texts).
std::vector<std::string> codec_names();

}  // namespace ferry::compress
