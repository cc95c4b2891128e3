// GPT-2's byte-level alphabet (Radford et al. 2019, encoder.py `bytes_to_unicode`; Hugging Face
// tokenizers' ByteLevel pre-tokenizer and decoder): each of the 256 byte values is shown as one
// printable code point, so that a BPE vocabulary of strings covers every byte string. Bytes
// '!'..'~', U+00A1..U+00AC and U+00AE..U+00FF stand for themselves; the other 68 (control
// bytes, space, DEL, 0x80..0xA0, 0xAD) map in increasing order to U+0100..U+0143 (space -> 'Ġ'
// U+0120, '\n' -> 'Ċ' U+010A). The mapping is a bijection, so decoding is exact for any bytes.
#pragma once

#include <string>
#include <string_view>

namespace ferry::moe {

// The code point that stands for byte `b`.
char32_t byte_level_char(unsigned char b);

// The byte that code point `cp` stands for, or -1 when `cp` is not in the alphabet.
int byte_level_byte(char32_t cp);

// Each byte of `bytes` as its code point, UTF-8 encoded (the form of vocabulary entries).
std::string byte_level_encode(std::string_view bytes);

// The bytes that a string of alphabet code points stands for; false (out untouched) when `text`
// is not valid UTF-8 or holds a code point outside the alphabet.
bool byte_level_decode(std::string_view text, std::string& out);

}  // namespace ferry::moe
