#include "moe/tokenizer/pre_tokenizer.h"

#include <algorithm>

namespace ferry::moe {

namespace {

SplitBehavior parse_behavior(const nlohmann::json& obj, const JsonPlace& at) {
  const std::string b = json_string(json_required(obj, "behavior", at), at.child("behavior"));
  if (b == "Removed") return SplitBehavior::kRemoved;
  if (b == "Isolated") return SplitBehavior::kIsolated;
  if (b == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (b == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (b == "Contiguous") return SplitBehavior::kContiguous;
  at.child("behavior").fail("split behavior '", b,
                            "' is not one of Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous");
}

struct Piece {
  std::size_t begin, end;
  bool is_match;
};

}  // namespace

PreTokenizer::PreTokenizer(const nlohmann::json& j, const JsonPlace& at, const Pcre2Options& regex_options) {
  if (j.is_null()) at.fail("is null: ferry reads byte-level BPE tokenizers, whose pre_tokenizer has a ByteLevel step");
  add(j, at, regex_options);
  if (!byte_level_) at.fail("has no ByteLevel step: ferry reads byte-level BPE tokenizers only");
}

void PreTokenizer::add(const nlohmann::json& j, const JsonPlace& at, const Pcre2Options& regex_options) {
  const std::string type = json_type(j, at);
  if (byte_level_) at.fail(type, " after ByteLevel: ferry needs ByteLevel to be the last pre-tokenizer");
  if (type == "Sequence") {
    json_known_fields(j, {"type", "pretokenizers"}, at);
    const JsonPlace list_at = at.child("pretokenizers");
    const nlohmann::json& list = json_required(j, "pretokenizers", at);
    if (!list.is_array()) list_at.fail("expected an array, got ", json_excerpt(list));
    for (std::size_t i = 0; i < list.size(); ++i) add(list[i], list_at.index(i), regex_options);
  } else if (type == "Split") {
    json_known_fields(j, {"type", "pattern", "behavior", "invert"}, at);
    const JsonPlace pat_at = at.child("pattern");
    const nlohmann::json& pat = json_object(json_required(j, "pattern", at), pat_at);
    const nlohmann::json* re = json_find(pat, "Regex");
    const nlohmann::json* str = json_find(pat, "String");
    if (pat.size() != 1 || !(re || str)) pat_at.fail("expected {\"Regex\": ...} or {\"String\": ...}, got ", json_excerpt(pat));
    Pcre2Options o = regex_options;
    o.literal = str != nullptr;
    const JsonPlace value_at = pat_at.child(re ? "Regex" : "String");
    const std::string pattern = json_string(re ? *re : *str, value_at);
    SplitStep step{Pcre2Regex(pattern, o, "tokenizer '" + at.file + "': " + value_at.path), parse_behavior(j, at),
                   json_bool_or(j, "invert", false, at)};
    steps_.push_back(std::move(step));
  } else if (type == "Digits") {
    json_known_fields(j, {"type", "individual_digits"}, at);
    const bool individual = json_bool_or(j, "individual_digits", false, at);
    // Rust's char::is_numeric is the Unicode category N; HF splits on each numeric character
    // (individual) or on runs of them (Contiguous), which is Isolated on \p{N} or \p{N}+.
    steps_.push_back({Pcre2Regex(individual ? R"(\p{N})" : R"(\p{N}+)", regex_options, "Digits"),
                      SplitBehavior::kIsolated, false});
  } else if (type == "ByteLevel") {
    json_known_fields(j, {"type", "add_prefix_space", "trim_offsets", "use_regex"}, at);
    byte_level_ = true;
    add_prefix_space_ = json_bool_or(j, "add_prefix_space", false, at);
    json_bool_or(j, "trim_offsets", true, at);  // offsets only; ferry keeps none
    prefix_step_ = steps_.size();
    // use_regex defaults to true: files of tokenizers < 0.13 do not have the field.
    if (json_bool_or(j, "use_regex", true, at))
      steps_.push_back({Pcre2Regex(kGpt2PreTokenizerRegex, regex_options, "ByteLevel regex"),
                        SplitBehavior::kIsolated, false});
  } else {
    at.child("type").fail("pre-tokenizer type '", type,
                          "' is not implemented (ferry implements ByteLevel, Split, Digits, Sequence)");
  }
}

void PreTokenizer::apply(const SplitStep& step, std::string_view text, std::vector<std::string>& out) {
  if (text.empty()) return;
  std::vector<Piece> pieces;
  std::size_t prev = 0;
  for (const auto& [b, e] : step.regex.find_all(text)) {
    if (b != prev) pieces.push_back({prev, b, false});
    pieces.push_back({b, e, true});
    prev = e;
  }
  if (prev != text.size()) pieces.push_back({prev, text.size(), false});
  if (step.invert)
    for (auto& p : pieces) p.is_match = !p.is_match;

  // `keep` holds [begin, end, removed]; the folds are those of NormalizedString::split.
  std::vector<Piece> keep;  // is_match here means "removed"
  bool previous_match = false;
  switch (step.behavior) {
    case SplitBehavior::kIsolated:
      for (const auto& p : pieces) keep.push_back({p.begin, p.end, false});
      break;
    case SplitBehavior::kRemoved:
      keep = pieces;
      break;
    case SplitBehavior::kContiguous:
      for (const auto& p : pieces) {
        if (p.is_match == previous_match && !keep.empty()) keep.back().end = p.end;
        else keep.push_back({p.begin, p.end, false});
        previous_match = p.is_match;
      }
      break;
    case SplitBehavior::kMergedWithPrevious:
      for (const auto& p : pieces) {
        if (p.is_match && !previous_match && !keep.empty()) keep.back().end = p.end;
        else keep.push_back({p.begin, p.end, false});
        previous_match = p.is_match;
      }
      break;
    case SplitBehavior::kMergedWithNext:
      for (auto it = pieces.rbegin(); it != pieces.rend(); ++it) {
        if (it->is_match && !previous_match && !keep.empty()) keep.back().begin = it->begin;
        else keep.push_back({it->begin, it->end, false});
        previous_match = it->is_match;
      }
      std::reverse(keep.begin(), keep.end());
      break;
  }
  for (const auto& p : keep)
    if (!p.is_match && p.end > p.begin) out.emplace_back(text.substr(p.begin, p.end - p.begin));
}

void PreTokenizer::split(std::string_view text, std::vector<std::string>& out) const {
  std::vector<std::string> pieces;
  if (!text.empty()) pieces.emplace_back(text);
  std::vector<std::string> next;
  for (std::size_t s = 0; s <= steps_.size(); ++s) {
    if (s == prefix_step_ && add_prefix_space_)
      for (auto& p : pieces)
        if (p[0] != ' ') p.insert(p.begin(), ' ');
    if (s == steps_.size()) break;
    next.clear();
    for (const auto& p : pieces) apply(steps_[s], p, next);
    pieces.swap(next);
  }
  for (auto& p : pieces) out.push_back(std::move(p));
}

}  // namespace ferry::moe
