// Tokenizers: byte-level (ferry's tiny models), SentencePiece (tokenizer.model of Mixtral-style
// checkpoints) and byte-level BPE (tokenizer.json of Qwen2/OLMoE/DeepSeek-style ones, bpe_tokenizer.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ferry::moe {

// SentencePiece's token types, which GGUF's tokenizer.ggml.token_type stores.
enum class TokenType : std::int32_t {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

// A tokenizer's vocabulary as model files store it (GGUF's tokenizer.ggml.* keys, written by
// moe/model/gguf_layout.h). Ids without a token (gaps of a tokenizer.json vocabulary) hold
// "[PAD<id>]" of type kUnused, as llama.cpp's converter writes them.
struct TokenizerVocab {
  enum class Kind { kBytes, kSentencePiece, kByteLevelBpe };
  Kind kind = Kind::kBytes;
  std::vector<std::string> tokens;  // by id (byte-level BPE and bytes: GPT-2's byte alphabet)
  std::vector<float> scores;        // SentencePiece's scores; empty for the others
  std::vector<TokenType> types;     // by id
  std::vector<std::string> merges;  // byte-level BPE: "a b" in rank order (tokenizer.json's list)
  int bos_id = -1;                  // -1: none
  int eos_id = -1;                  // SentencePiece's; -1 for the others (their files name it)
  int unk_id = -1;
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual std::vector<std::int32_t> encode(const std::string& text) const = 0;
  virtual std::string decode(const std::vector<std::int32_t>& ids) const = 0;
  virtual int vocab_size() const = 0;
  // Token prepended to prompts, or -1 when the tokenizer has none.
  virtual int bos_id() const { return -1; }
  virtual std::string name() const = 0;
  // The whole vocabulary, for writing it into another model format.
  virtual TokenizerVocab vocabulary() const = 0;
};

// One token per byte (vocabulary 256); decode is exact.
class ByteTokenizer : public Tokenizer {
 public:
  std::vector<std::int32_t> encode(const std::string& text) const override;
  std::string decode(const std::vector<std::int32_t>& ids) const override;
  int vocab_size() const override { return 256; }
  std::string name() const override { return "byte"; }
  // Kind kBytes: token b is byte b in GPT-2's byte alphabet, every token kNormal.
  TokenizerVocab vocabulary() const override;
};

// Loads DIR/tokenizer.model with SentencePiece; throws IoError/FormatError, or InvalidArgument when
// ferry was built without SentencePiece.
std::unique_ptr<Tokenizer> make_sentencepiece_tokenizer(const std::string& model_path);

// The tokenizer of a model directory: byte-level when config.json says "ferry_tokenizer": "byte";
// else tokenizer.model (SentencePiece) when present; else tokenizer.json (byte-level BPE) when
// present; else byte-level when the vocabulary is 256. A GGUF model file (`dir` a file): the
// tokenizer it stores (gguf_tokenizer.h). Throws IoError naming what is missing,
// FormatError for a tokenizer file ferry cannot read.
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& dir, const std::string& config_tokenizer,
                                          int vocab_size);

}  // namespace ferry::moe
