// Unicode Normalization Form C (UAX #15) of UTF-8 text, the "NFC" normalizer of tokenizer.json
// (Qwen2's tokenizer uses it), computed with ICU's Normalizer2.
#pragma once

#include <string>
#include <string_view>

namespace ferry::moe {

// NFC of `text`. Only well-formed UTF-8 is normalized: each run of invalid bytes is kept as it
// is and splits the text (normalization never combines across it), so arbitrary bytes survive.
std::string nfc_normalize(std::string_view text);

}  // namespace ferry::moe
