// How an error message echoes a string the user supplied (a tensor name, a key, a token): bounded,
// so that a 1 MiB name in a file makes a one-line message, not a 1 MiB one.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace ferry {

constexpr std::size_t kExcerptBytes = 200;

// `text` with its control bytes and bytes that are not UTF-8 escaped (\n, \t, \xNN: the message
// stays one line of text) and, past `max_bytes` bytes, cut at a character boundary and followed
// by "…(N bytes)" (N: the whole length).
std::string excerpt(std::string_view text, std::size_t max_bytes = kExcerptBytes);

}  // namespace ferry
