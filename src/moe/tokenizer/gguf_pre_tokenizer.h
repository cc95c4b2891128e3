// GGUF pre-tokenizers: tokenizer.ggml.pre names how llama.cpp cuts text into pieces before
// byte-level BPE (llama-vocab.cpp maps each name to a set of regexes). One registry entry
// (core/registry.h) per name ferry builds, holding its regexes as data; a model family's entry names
// the one its GGUF files carry (ModelFamily::gguf_tokenizer_pre, moe/model/family.h). Adding a
// pre-tokenizer is one entry in register_builtin_gguf_pre_tokenizers().
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace ferry::moe {

struct GgufPreTokenizerEntry {
  std::string name;                     // tokenizer.ggml.pre, e.g. "qwen2"
  std::string summary;                  // one line: the models that carry it
  // The regexes, applied in order, each splitting every piece of the one before into its matches
  // and the text between them (tokenizers' Split, Isolated); empty: GPT-2's regex
  // (kGpt2PreTokenizerRegex, pre_tokenizer.h), as ByteLevel's own.
  std::vector<std::string> regexes = {};
};

// default, gpt2, olmo (GPT-2's regex), qwen2, deepseek-v3, glm4, gpt-4o and kimi-k2. Idempotent.
void register_builtin_gguf_pre_tokenizers();
// The entry of `name`; nullptr for a pre-tokenizer ferry does not build.
const GgufPreTokenizerEntry* find_gguf_pre_tokenizer(const std::string& name);
// Sorted (error messages).
std::vector<std::string> gguf_pre_tokenizer_names();
// The entry as tokenizer.json's "pre_tokenizer" value (pre_tokenizer.h): ByteLevel with GPT-2's
// regex, or a Sequence of one Split per regex followed by ByteLevel without its regex.
nlohmann::json gguf_pre_tokenizer_json(const GgufPreTokenizerEntry& entry);

}  // namespace ferry::moe
