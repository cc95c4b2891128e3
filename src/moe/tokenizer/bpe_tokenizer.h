// The byte-level BPE tokenizer of a Hugging Face `tokenizer.json` (GPT-2, Qwen2, OLMoE,
// DeepSeek, Llama 3 style), encoding as `tokenizers` does with add_special_tokens=False:
//   1. added tokens with normalized=false are found in the raw text (added_tokens.h);
//   2. the rest is normalized (null or NFC) and added tokens with normalized=true are found;
//   3. the rest is cut into runs of valid UTF-8 and runs of invalid bytes (utf8.h); each valid
//      run goes through the pre-tokenizer (pre_tokenizer.h); each invalid run is one pre-token;
//   4. each pre-token is encoded by the BPE model (bpe_model.h).
// decode maps each id back to bytes: a vocabulary entry through GPT-2's alphabet (an entry
// outside it as its own UTF-8, as HF's ByteLevel decoder does), an added token (special ones
// too) as its content; ids in neither are skipped, as HF skips them. decode returns the exact
// bytes, never U+FFFD replacements, so decode(encode(s)) == s for any bytes s, unless the file
// changes the text by design: a normalizer (NFC: the valid runs of s come back composed),
// add_prefix_space (a space is added), a Removed split, lstrip/rstrip added tokens (the
// whitespace they swallow is gone).
//
// bos_id(): the leading special token of a TemplateProcessing post-processor's `single`
// template ([SpecialToken, Sequence A]), alone or inside a Sequence; -1 without one. A
// template that adds tokens after the sequence is refused (ferry's callers only prepend).
// tokenizer_config.json is not read.
//
// Refused, each with a FormatError naming the file and the field: other model types,
// normalizers other than NFC, pre-tokenizers other than ByteLevel/Split/Digits/Sequence,
// decoders other than ByteLevel, post-processors other than ByteLevel/TemplateProcessing,
// non-null truncation/padding, unknown fields.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "moe/tokenizer/pcre2_regex.h"
#include "moe/tokenizer/tokenizer.h"

namespace ferry::moe {

struct BpeTokenizerOptions {
  Pcre2Options regex;  // how the pre-tokenizer regexes are compiled and run (JIT, match limit)
};

// Parses the text of a tokenizer.json; `origin` names the file in errors (FormatError).
std::unique_ptr<Tokenizer> parse_bpe_tokenizer_json(std::string_view text, const std::string& origin,
                                                    const BpeTokenizerOptions& options = {});

// Reads and parses the file `path` (IoError when it cannot be read).
std::unique_ptr<Tokenizer> load_bpe_tokenizer_json(const std::string& path, const BpeTokenizerOptions& options = {});

}  // namespace ferry::moe
