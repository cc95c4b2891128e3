// The added tokens of a tokenizer.json (special tokens such as <|endoftext|>, chat markers):
// found in the text before pre-tokenization and emitted whole, as Hugging Face tokenizers'
// AddedVocabulary does. Matching is leftmost-longest (its aho-corasick MatchKind::LeftmostLongest),
// then per token:
//   single_word  a match touching a word character (\w, Unicode) on either side is skipped;
//   lstrip       the whitespace before the match joins it (not beyond the previous match);
//   rstrip       the whitespace after the match joins it.
// Matching is on bytes, so text that is not valid UTF-8 is searched too; a byte that starts no
// well-formed character counts as neither a word character nor whitespace.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ferry::moe {

struct AddedToken {
  std::int32_t id = 0;
  std::string content;       // matched as these exact bytes; decode emits them
  bool single_word = false;  // only as a whole word
  bool lstrip = false;       // swallows whitespace on its left
  bool rstrip = false;       // swallows whitespace on its right
  bool normalized = false;   // matched in the normalized text (after NFC), not the raw text
  bool special = false;      // a control token (HF's skip_special_tokens drops it; ferry never does)
};

// A piece of the text: an added token (id >= 0) or plain text (id -1) at [begin, end).
struct AddedTokenSegment {
  std::int32_t id = -1;
  std::size_t begin = 0;
  std::size_t end = 0;
};

class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  // `tokens` with non-empty contents; contents must be distinct.
  explicit AddedTokenMatcher(std::vector<AddedToken> tokens);

  bool empty() const { return tokens_.empty(); }
  // Cuts `text` into added tokens and the plain text between them (covering `text`, in order;
  // no empty plain segments).
  std::vector<AddedTokenSegment> split(std::string_view text) const;

 private:
  // The longest token whose content starts at text[pos], or -1 (index into tokens_).
  int longest_at(std::string_view text, std::size_t pos) const;

  std::vector<AddedToken> tokens_;
  // A byte trie of the contents: (node << 8 | byte) -> child node; node 0 is the root.
  std::unordered_map<std::uint64_t, std::uint32_t> trie_;
  std::vector<int> terminal_;  // per node: the token ending there, or -1
};

}  // namespace ferry::moe
