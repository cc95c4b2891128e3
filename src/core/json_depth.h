// How deeply a JSON text nests its arrays and objects, found by one scan without parsing, so that
// a hostile body or file (100,000 nested arrays in 200 KB) is refused before a recursive walk or a
// dump() of it can exhaust a thread's stack. Strings (and their escapes) are skipped; the text need
// not be valid JSON.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace ferry {

// The nesting depth of `text`'s arrays and objects ("1" is 0, "[[1]]" is 2), counting at most up to
// `limit` + 1 (the scan stops there).
std::size_t json_nesting_depth(std::string_view text, std::size_t limit);

// Nesting that JSON from outside may have: request bodies (the OpenAI API nests 3 levels) and
// model files (tokenizer.json, config.json: under 10).
inline constexpr std::size_t kMaxJsonDepthRequest = 64;
inline constexpr std::size_t kMaxJsonDepthFile = 256;

// FormatError "WHAT nests arrays or objects deeper than LIMIT levels" when it does.
void require_json_depth(std::string_view text, std::size_t limit, const std::string& what);

}  // namespace ferry
