// UTF-8 decoding and validation for the tokenizers: text reaching them is arbitrary bytes, but
// the regex engine (PCRE2 in UTF mode) and the normalizer (ICU) accept only valid UTF-8, so the
// text is cut into valid runs and runs of invalid bytes first.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace ferry::moe {

// Length (1..4) of the well-formed UTF-8 sequence starting at s[i], or 0 when none starts there
// (a stray continuation byte, an overlong form, a surrogate, a value above U+10FFFF, or a
// sequence cut short). The same rules as PCRE2's and ICU's validity checks (RFC 3629).
std::size_t utf8_sequence_length(std::string_view s, std::size_t i);

// The code point of the well-formed sequence at s[i] of length `len` (from utf8_sequence_length).
char32_t utf8_decode_at(std::string_view s, std::size_t i, std::size_t len);

// The offset of the first byte of `s` that starts no well-formed sequence, or s.size() when `s`
// is valid UTF-8 throughout.
std::size_t utf8_invalid_at(std::string_view s);

// Appends the UTF-8 encoding of `cp` (which must be <= U+10FFFF and not a surrogate).
void utf8_append(std::string& out, char32_t cp);

// A piece of text: [begin, end) of the input, and whether it is valid UTF-8.
struct Utf8Run {
  std::size_t begin = 0;
  std::size_t end = 0;
  bool valid = true;
};

// Cuts `s` into maximal runs of well-formed UTF-8 and maximal runs of bytes that start no
// well-formed sequence, in order; the runs cover `s` exactly. An empty `s` gives no runs.
std::vector<Utf8Run> utf8_runs(std::string_view s);

// Whether `cp` has the Unicode White_Space property (what Rust's char::is_whitespace tests,
// which Hugging Face tokenizers use for an added token's lstrip/rstrip).
bool is_unicode_whitespace(char32_t cp);

}  // namespace ferry::moe
