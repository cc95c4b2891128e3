#include "moe/tokenizer/byte_level.h"

#include <array>

#include "moe/tokenizer/utf8.h"

namespace ferry::moe {

namespace {

struct Tables {
  std::array<char32_t, 256> to_char{};
  std::array<int, 0x144> to_byte{};  // indexed by code point; every alphabet code point is < U+0144
  Tables() {
    to_byte.fill(-1);
    char32_t next = 0x100;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      to_char[b] = printable ? static_cast<char32_t>(b) : next++;
      to_byte[to_char[b]] = b;
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

char32_t byte_level_char(unsigned char b) { return tables().to_char[b]; }

int byte_level_byte(char32_t cp) { return cp < tables().to_byte.size() ? tables().to_byte[cp] : -1; }

std::string byte_level_encode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) utf8_append(out, byte_level_char(b));
  return out;
}

bool byte_level_decode(std::string_view text, std::string& out) {
  std::string bytes;
  bytes.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t len = utf8_sequence_length(text, i);
    if (len == 0) return false;
    const int b = byte_level_byte(utf8_decode_at(text, i, len));
    if (b < 0) return false;
    bytes.push_back(static_cast<char>(b));
    i += len;
  }
  out += bytes;
  return true;
}

}  // namespace ferry::moe
