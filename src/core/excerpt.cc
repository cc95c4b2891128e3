#include "core/excerpt.h"

#include <cstdio>

namespace ferry {

std::string excerpt(std::string_view text, std::size_t max_bytes) {
  std::size_t cut = text.size();
  if (cut > max_bytes) {
    cut = max_bytes;
    // Not inside a UTF-8 sequence: back up over continuation bytes (10xxxxxx) to a lead byte.
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  }
  std::string out;
  out.reserve(cut + 24);
  for (std::size_t i = 0; i < cut; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {  // a UTF-8 sequence as it is; a byte that starts none as \xNN
      const std::size_t n = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xC2 && c <= 0xDF ? 2 : 0;
      bool whole = n > 0 && i + n <= cut;
      for (std::size_t k = 1; whole && k < n; ++k) whole = (static_cast<unsigned char>(text[i + k]) & 0xC0) == 0x80;
      if (whole) {
        out.append(text.substr(i, n));
        i += n - 1;
        continue;
      }
    }
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c >= 0x7F) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (cut < text.size()) out += "\xE2\x80\xA6(" + std::to_string(text.size()) + " bytes)";
  return out;
}

}  // namespace ferry
