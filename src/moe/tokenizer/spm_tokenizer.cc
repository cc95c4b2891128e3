#include "moe/tokenizer/spm_tokenizer.h"

#include <algorithm>
#include <cstdio>
#include <queue>
#include <string_view>
#include <unordered_map>

#include "core/error.h"
#include "moe/tokenizer/added_tokens.h"
#include "moe/tokenizer/utf8.h"

namespace ferry::moe {

namespace {

constexpr std::string_view kSpmSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's whitespace

// `s` with every `from` replaced by `to`.
std::string spm_replace(std::string_view s, std::string_view from, std::string_view to) {
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    if (s.compare(i, from.size(), from) == 0) {
      out += to;
      i += from.size();
    } else {
      out += s[i++];
    }
  }
  return out;
}

class SpmTokenizer : public Tokenizer {
 public:
  SpmTokenizer(TokenizerVocab vocab, const SpmTokenizerOptions& options, const std::string& origin)
      : vocab_(std::move(vocab)), options_(options) {
    const std::size_t n = vocab_.tokens.size();
    if (vocab_.scores.size() != n || vocab_.types.size() != n)
      FERRY_THROW(FormatError, "'", origin, "': a SentencePiece vocabulary needs one score and one type per piece (",
                  n, " pieces, ", vocab_.scores.size(), " scores, ", vocab_.types.size(), " types)");
    if (options_.bos_id >= static_cast<int>(n))
      FERRY_THROW(FormatError, "'", origin, "': the BOS id ", options_.bos_id, " is not a piece");
    std::vector<AddedToken> added;
    for (std::size_t id = 0; id < n; ++id) {
      const std::string& piece = vocab_.tokens[id];
      switch (vocab_.types[id]) {
        case TokenType::kNormal: normal_[piece] = static_cast<std::int32_t>(id); break;
        case TokenType::kControl:
        case TokenType::kUserDefined:
          if (!piece.empty() && !added_ids_.count(piece)) {
            added_ids_[piece] = static_cast<std::int32_t>(id);
            added.push_back({.id = static_cast<std::int32_t>(id), .content = piece});
          }
          break;
        case TokenType::kByte: {
          unsigned value = 0;
          char end = 0;
          if (piece.size() != 6 || std::sscanf(piece.c_str(), "<0x%2X%c", &value, &end) != 2 || end != '>')
            FERRY_THROW(FormatError, "'", origin, "': byte piece ", id, " '", piece, "' is not <0xXX>");
          byte_ids_[value] = static_cast<std::int32_t>(id);
          break;
        }
        case TokenType::kUnknown:
          if (unk_id_ < 0) unk_id_ = static_cast<std::int32_t>(id);
          break;
        case TokenType::kUnused: break;
      }
    }
    if (vocab_.unk_id >= 0 && vocab_.unk_id < static_cast<int>(n)) unk_id_ = vocab_.unk_id;
    matcher_ = AddedTokenMatcher(std::move(added));
  }

  std::vector<std::int32_t> encode(const std::string& text) const override {
    std::vector<std::int32_t> ids;
    bool after_piece = true;  // the text's start counts as following a piece
    for (const AddedTokenSegment& s : matcher_.split(text)) {
      if (s.id >= 0) {
        ids.push_back(s.id);
        after_piece = true;
        continue;
      }
      std::string plain = options_.add_space_prefix && after_piece ? " " : "";
      plain.append(text, s.begin, s.end - s.begin);
      encode_plain(spm_replace(plain, " ", kSpmSpace), ids);
      after_piece = false;
    }
    return ids;
  }

  std::string decode(const std::vector<std::int32_t>& ids) const override {
    std::string out;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const std::int32_t id = ids[i];
      if (id < 0 || id >= static_cast<std::int32_t>(vocab_.tokens.size())) continue;
      const std::string& piece = vocab_.tokens[id];
      switch (vocab_.types[id]) {
        case TokenType::kByte: out.push_back(static_cast<char>(std::stoi(piece.substr(3, 2), nullptr, 16))); break;
        case TokenType::kNormal: {
          std::string s = spm_replace(piece, kSpmSpace, " ");
          if (i == 0 && options_.add_space_prefix && !s.empty() && s[0] == ' ') s.erase(0, 1);
          out += s;
          break;
        }
        case TokenType::kUnused: break;
        default: out += piece;
      }
    }
    return out;
  }

  int vocab_size() const override { return static_cast<int>(vocab_.tokens.size()); }
  int bos_id() const override { return options_.bos_id; }
  std::string name() const override { return "sentencepiece"; }
  TokenizerVocab vocabulary() const override { return vocab_; }

 private:
  struct Symbol {
    std::size_t begin = 0, size = 0;  // bytes of the segment; size 0 once merged into its left
    int prev = -1, next = -1;
  };
  struct Bigram {
    float score = 0;
    int left = 0, right = 0;
    std::size_t size = 0;  // the merged length when queued (stale once a side has changed)
    bool operator<(const Bigram& o) const { return score < o.score || (score == o.score && left > o.left); }
  };

  // llm_tokenizer_spm_session::tokenize: greedy merging of the best-scoring adjacent pair.
  void encode_plain(const std::string& s, std::vector<std::int32_t>& ids) const {
    std::vector<Symbol> sym;
    for (std::size_t i = 0; i < s.size();) {
      const std::size_t len = std::max<std::size_t>(utf8_sequence_length(s, i), 1);  // a bad byte alone
      const int k = static_cast<int>(sym.size());
      sym.push_back({i, len, k - 1, -1});
      if (k > 0) sym[k - 1].next = k;
      i += len;
    }
    std::priority_queue<Bigram> queue;
    auto try_add = [&](int left, int right) {
      if (left < 0 || right < 0) return;
      const std::size_t size = sym[left].size + sym[right].size;
      auto it = normal_.find(std::string_view(s).substr(sym[left].begin, size));
      if (it != normal_.end()) queue.push({vocab_.scores[it->second], left, right, size});
    };
    for (int i = 1; i < static_cast<int>(sym.size()); ++i) try_add(i - 1, i);
    while (!queue.empty()) {
      const Bigram b = queue.top();
      queue.pop();
      Symbol& left = sym[b.left];
      Symbol& right = sym[b.right];
      if (left.size == 0 || right.size == 0 || left.size + right.size != b.size || left.next != b.right) continue;
      left.size += right.size;
      right.size = 0;
      left.next = right.next;
      if (right.next >= 0) sym[right.next].prev = b.left;
      try_add(left.prev, b.left);
      try_add(b.left, left.next);
    }
    for (int i = sym.empty() ? -1 : 0; i >= 0; i = sym[i].next) {
      const std::string_view text = std::string_view(s).substr(sym[i].begin, sym[i].size);
      if (auto it = normal_.find(text); it != normal_.end()) {
        ids.push_back(it->second);
        continue;
      }
      bool bytes = true;
      for (unsigned char c : text) bytes = bytes && byte_ids_.count(c);
      if (bytes) {
        for (unsigned char c : text) ids.push_back(byte_ids_.at(c));
      } else if (unk_id_ >= 0) {
        ids.push_back(unk_id_);
      } else {
        FERRY_THROW(FormatError, "the SentencePiece vocabulary has neither byte pieces nor an unknown piece for '",
                    std::string(text), "'");
      }
    }
  }

  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view v) const { return std::hash<std::string_view>{}(v); }
  };
  TokenizerVocab vocab_;
  SpmTokenizerOptions options_;
  std::unordered_map<std::string, std::int32_t, Hash, std::equal_to<>> normal_;
  std::unordered_map<std::string, std::int32_t> added_ids_;
  std::unordered_map<unsigned, std::int32_t> byte_ids_;
  std::int32_t unk_id_ = -1;
  AddedTokenMatcher matcher_;
};

}  // namespace

std::unique_ptr<Tokenizer> make_spm_tokenizer(TokenizerVocab vocab, const SpmTokenizerOptions& options,
                                              const std::string& origin) {
  if (vocab.kind != TokenizerVocab::Kind::kSentencePiece)
    FERRY_THROW(InvalidArgument, "'", origin, "': make_spm_tokenizer needs a SentencePiece vocabulary");
  return std::make_unique<SpmTokenizer>(std::move(vocab), options, origin);
}

}  // namespace ferry::moe
