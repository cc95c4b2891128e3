// Incremental detokenization with stop strings: turns the generated tokens into text deltas that
// are safe to send as they come. Held back: a suffix that may still grow into a stop string, and
// the bytes of a UTF-8 character that is not complete yet (a byte-level token can cut one). When a
// stop string appears the text ends just before it, as OpenAI's API does.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "moe/tokenizer/tokenizer.h"

namespace ferry::moe {

class TextStream {
 public:
  // `tokenizer` outlives the stream (the server's, alive while it serves).
  TextStream(const Tokenizer& tokenizer, std::vector<std::string> stops);
  // Adds a generated token; false when the text now contains a stop string (the text is cut there).
  bool push(std::int32_t token);
  // The text that became safe since the last take().
  std::string take();
  // The rest, once generation is over (what was held back, complete or not).
  std::string finish();
  const std::string& text() const { return text_; }
  int tokens() const { return static_cast<int>(ids_.size()); }

 private:
  std::size_t safe_end() const;

  const Tokenizer& tokenizer_;
  std::vector<std::string> stops_;
  std::vector<std::int32_t> ids_;
  std::string text_;
  std::size_t sent_ = 0;
  bool stopped_ = false;
};

// The length of the longest prefix of `text` that ends on a UTF-8 character boundary (a truncated
// multi-byte sequence at the end is left out; invalid bytes count as characters of their own).
std::size_t utf8_complete_prefix(const std::string& text);

}  // namespace ferry::moe
