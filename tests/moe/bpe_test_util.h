// Shared by the GGUF tests: a small byte-level BPE tokenizer.json written into a model directory.
#pragma once

#include <fstream>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "moe/tokenizer/byte_level.h"

namespace ferry::moe::testing {

// An added token of tokenizer.json, typed as Hugging Face writes them.
inline nlohmann::json added_token(int id, const char* content, bool special) {
  return nlohmann::json{{"id", id}, {"content", content}, {"single_word", false}, {"lstrip", false},
                        {"rstrip", false}, {"normalized", false}, {"special", special}};
}

// DIR/tokenizer.json: a byte-level BPE of the 256 byte symbols, "Ġt" (256) and "he" (257) with
// their two merges, and `added` tokens (ids from 258).
inline void write_small_bpe_tokenizer(const std::string& dir, const nlohmann::json& added) {
  nlohmann::json vocab = nlohmann::json::object();
  for (int b = 0; b < 256; ++b) {
    const char byte = static_cast<char>(b);
    vocab[byte_level_encode(std::string_view(&byte, 1))] = b;
  }
  vocab["\xC4\xA0t"] = 256;  // Ġt
  vocab["he"] = 257;
  const nlohmann::json byte_level = {
      {"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};
  const nlohmann::json tokenizer = {
      {"version", "1.0"}, {"truncation", nullptr}, {"padding", nullptr}, {"added_tokens", added},
      {"normalizer", nullptr}, {"pre_tokenizer", byte_level}, {"decoder", byte_level},
      {"model",
       {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", nullptr},
        {"end_of_word_suffix", nullptr}, {"fuse_unk", false}, {"byte_fallback", false}, {"vocab", vocab},
        {"merges", nlohmann::json::array({"\xC4\xA0 t", "h e"})}}}};
  std::ofstream(dir + "/tokenizer.json") << tokenizer.dump();
}

}  // namespace ferry::moe::testing
