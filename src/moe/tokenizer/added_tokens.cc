#include "moe/tokenizer/added_tokens.h"

#include <unicode/uchar.h>

#include "core/error.h"
#include "moe/tokenizer/utf8.h"

namespace ferry::moe {

namespace {

// Rust regex's Unicode \w (which tokenizers' single_word tests with \w$ and ^\w): Alphabetic,
// marks, decimal digits, connector punctuation and Join_Control (UTS #18 annex C).
bool is_word_char(char32_t cp) {
  const auto c = static_cast<UChar32>(cp);
  if (u_hasBinaryProperty(c, UCHAR_ALPHABETIC) || u_hasBinaryProperty(c, UCHAR_JOIN_CONTROL)) return true;
  const std::int8_t t = u_charType(c);
  return t == U_NON_SPACING_MARK || t == U_COMBINING_SPACING_MARK || t == U_ENCLOSING_MARK ||
         t == U_DECIMAL_DIGIT_NUMBER || t == U_CONNECTOR_PUNCTUATION;
}

// The character ending at text[end) (its start and code point), or false when the bytes before
// `end` do not end a well-formed character.
bool char_before(std::string_view text, std::size_t end, std::size_t& start, char32_t& cp) {
  for (std::size_t len = 1; len <= 4 && len <= end; ++len) {
    if (utf8_sequence_length(text, end - len) == len) {
      start = end - len;
      cp = utf8_decode_at(text, start, len);
      return true;
    }
  }
  return false;
}

bool char_at(std::string_view text, std::size_t pos, std::size_t& len, char32_t& cp) {
  if (pos >= text.size()) return false;
  len = utf8_sequence_length(text, pos);
  if (len == 0) return false;
  cp = utf8_decode_at(text, pos, len);
  return true;
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(std::vector<AddedToken> tokens) : tokens_(std::move(tokens)) {
  terminal_.push_back(-1);
  for (std::size_t t = 0; t < tokens_.size(); ++t) {
    FERRY_CHECK(!tokens_[t].content.empty(), "an added token with empty content reached the matcher");
    std::uint32_t node = 0;
    for (unsigned char b : tokens_[t].content) {
      const std::uint64_t key = (static_cast<std::uint64_t>(node) << 8) | b;
      auto it = trie_.find(key);
      if (it == trie_.end()) {
        it = trie_.emplace(key, static_cast<std::uint32_t>(terminal_.size())).first;
        terminal_.push_back(-1);
      }
      node = it->second;
    }
    FERRY_CHECK(terminal_[node] < 0, "two added tokens with the same content reached the matcher");
    terminal_[node] = static_cast<int>(t);
  }
}

int AddedTokenMatcher::longest_at(std::string_view text, std::size_t pos) const {
  int best = -1;
  std::uint32_t node = 0;
  for (std::size_t i = pos; i < text.size(); ++i) {
    auto it = trie_.find((static_cast<std::uint64_t>(node) << 8) | static_cast<unsigned char>(text[i]));
    if (it == trie_.end()) break;
    node = it->second;
    if (terminal_[node] >= 0) best = terminal_[node];
  }
  return best;
}

std::vector<AddedTokenSegment> AddedTokenMatcher::split(std::string_view text) const {
  std::vector<AddedTokenSegment> out;
  if (tokens_.empty()) {
    if (!text.empty()) out.push_back({-1, 0, text.size()});
    return out;
  }
  std::size_t done = 0;  // end of the last emitted token (HF's start_offset)
  std::size_t pos = 0;   // where the search for the next match resumes (the match's own end)
  while (pos < text.size()) {
    const int t = longest_at(text, pos);
    if (t < 0) {
      ++pos;
      continue;
    }
    const AddedToken& tok = tokens_[t];
    std::size_t start = pos, stop = pos + tok.content.size();
    pos = stop;
    // A match inside whitespace that an rstrip token already swallowed (HF would emit
    // overlapping pieces here; ferry keeps the first).
    if (start < done) continue;
    std::size_t len = 0, before = 0;
    char32_t cp = 0;
    if (tok.single_word) {
      const bool word_before = char_before(text, start, before, cp) && is_word_char(cp);
      const bool word_after = char_at(text, stop, len, cp) && is_word_char(cp);
      if (word_before || word_after) continue;
    }
    if (tok.lstrip) {
      while (start > done && char_before(text, start, before, cp) && is_unicode_whitespace(cp)) start = before;
    }
    if (tok.rstrip) {
      while (char_at(text, stop, len, cp) && is_unicode_whitespace(cp)) stop += len;
    }
    if (start > done) out.push_back({-1, done, start});
    out.push_back({tok.id, start, stop});
    done = stop;
  }
  if (done < text.size()) out.push_back({-1, done, text.size()});
  return out;
}

}  // namespace ferry::moe
