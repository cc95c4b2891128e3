// The byte-level BPE model of a tokenizer.json (`model.type == "BPE"`; Sennrich et al. 2016,
// GPT-2's byte-level variant): each pre-token's bytes start as one symbol each (GPT-2's
// alphabet, byte_level.h), then the adjacent pair of lowest merge rank is merged, the leftmost
// of equal ranks first, until no adjacent pair has a merge. The merge order is that of Hugging
// Face tokenizers' Word::merge_all (a heap of (rank, position); a queued merge whose pair has
// changed is dropped), which for a well-formed merge list equals GPT-2's encoder.py.
//
// Read: vocab (token -> id), merges (rank = index; "a b" strings or ["a", "b"] pairs; a
// repeated pair keeps its last rank, as HF's map does), ignore_merges (a pre-token that is
// itself in the vocabulary is emitted whole), unk_token, fuse_unk (unused: every byte is in the
// vocabulary). Refused: dropout, byte_fallback, continuing_subword_prefix, end_of_word_suffix
// when set, and a vocabulary that lacks one of the 256 byte symbols.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "moe/tokenizer/json_fields.h"

namespace ferry::moe {

class BpeModel {
 public:
  // Parses tokenizer.json's "model" at `at`; FormatError naming the field for anything malformed
  // or refused.
  BpeModel(const nlohmann::json& model, const JsonPlace& at);

  // Appends the ids of one pre-token, given as raw bytes.
  void encode(std::string_view bytes, std::vector<std::int32_t>& out) const;

  // The vocabulary entry of `id` (byte-level form), or nullptr.
  const std::string* token(std::int32_t id) const;
  // The id of vocabulary entry `token`, or -1.
  std::int32_t id(const std::string& token) const;
  // Largest id in the vocabulary (-1 when empty).
  std::int32_t max_id() const { return max_id_; }
  std::size_t merge_count() const { return merges_.size(); }
  // The merges as the file lists them, each "a b" (a [a, b] pair of the newer format joined by a
  // space, a space inside a or b written as U+0120, as llama.cpp's converter writes them).
  const std::vector<std::string>& merge_list() const { return merge_list_; }

 private:
  static std::uint64_t pair_key(std::int32_t a, std::int32_t b) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) | static_cast<std::uint32_t>(b);
  }

  std::unordered_map<std::string, std::int32_t> vocab_;
  std::unordered_map<std::int32_t, std::string> tokens_;  // id -> entry (ids may have gaps)
  std::array<std::int32_t, 256> byte_ids_{};              // the id of each byte's symbol
  // (left id, right id) -> (rank, id of the merged token)
  std::unordered_map<std::uint64_t, std::pair<std::uint32_t, std::int32_t>> merges_;
  std::vector<std::string> merge_list_;
  bool ignore_merges_ = false;
  std::int32_t max_id_ = -1;
};

}  // namespace ferry::moe
