// The pre-tokenizer of a byte-level BPE tokenizer.json: cuts text into the pieces that BPE then
// encodes one by one, as Hugging Face tokenizers' `pre_tokenizers` do. Implemented:
//   ByteLevel {add_prefix_space, use_regex}  (use_regex: GPT-2's regex, Isolated), which must be
//                                            the last step: it marks the text as bytes for BPE;
//   Split {pattern: {Regex|String}, behavior, invert}  with every behaviour (Removed, Isolated,
//                                            MergedWithPrevious, MergedWithNext, Contiguous);
//   Digits {individual_digits}               (Split on \p{N} or \p{N}+, Isolated);
//   Sequence {pretokenizers: [...]}          (applied in order, nested sequences flattened).
// Any other type is refused by name. The split behaviours follow NormalizedString::split of
// tokenizers 0.19-0.21: the regex's matches and the gaps between them cover the text; Isolated
// keeps both as pieces, Removed drops the matches, MergedWithPrevious/Next glue each match to
// the gap before/after it, Contiguous glues runs of matches; invert swaps matches and gaps.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "moe/tokenizer/json_fields.h"
#include "moe/tokenizer/pcre2_regex.h"

namespace ferry::moe {

// GPT-2's pre-tokenizer regex (ByteLevel with use_regex): contractions, letters, digits and
// other symbols each with an optional leading space, then whitespace not followed by a
// non-space, then any whitespace.
inline constexpr const char* kGpt2PreTokenizerRegex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

class PreTokenizer {
 public:
  // Parses tokenizer.json's "pre_tokenizer" value at `at`; FormatError naming the field for a
  // malformed or unimplemented one (a null pre_tokenizer is refused too: without ByteLevel the
  // vocabulary is not byte-level).
  PreTokenizer(const nlohmann::json& j, const JsonPlace& at, const Pcre2Options& regex_options);

  // Appends the non-empty pieces of `text` (valid UTF-8) to `out`, in order.
  void split(std::string_view text, std::vector<std::string>& out) const;

 private:
  struct SplitStep {
    Pcre2Regex regex;
    SplitBehavior behavior = SplitBehavior::kIsolated;
    bool invert = false;
  };
  void add(const nlohmann::json& j, const JsonPlace& at, const Pcre2Options& regex_options);
  static void apply(const SplitStep& step, std::string_view text, std::vector<std::string>& out);

  std::vector<SplitStep> steps_;  // every step before ByteLevel, then ByteLevel's own regex split
  bool byte_level_ = false;       // a ByteLevel step was seen (must be last)
  bool add_prefix_space_ = false; // ByteLevel's: " " prepended to each piece not starting with one
  std::size_t prefix_step_ = 0;   // the step before which the prefix space is added (ByteLevel's)
};

}  // namespace ferry::moe
