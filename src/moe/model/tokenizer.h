// Tokenizers: byte-level (ferry's tiny models) and SentencePiece (tokenizer.model of real checkpoints).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ferry::moe {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual std::vector<std::int32_t> encode(const std::string& text) const = 0;
  virtual std::string decode(const std::vector<std::int32_t>& ids) const = 0;
  virtual int vocab_size() const = 0;
  // Token prepended to prompts, or -1 when the tokenizer has none.
  virtual int bos_id() const { return -1; }
  virtual std::string name() const = 0;
};

// One token per byte (vocabulary 256); decode is exact.
class ByteTokenizer : public Tokenizer {
 public:
  std::vector<std::int32_t> encode(const std::string& text) const override;
  std::string decode(const std::vector<std::int32_t>& ids) const override;
  int vocab_size() const override { return 256; }
  std::string name() const override { return "byte"; }
};

// Loads DIR/tokenizer.model with SentencePiece; throws IoError/FormatError, or InvalidArgument when
// ferry was built without SentencePiece.
std::unique_ptr<Tokenizer> make_sentencepiece_tokenizer(const std::string& model_path);

// The tokenizer of a model directory: tokenizer.model when present, byte-level when config.json
// says "ferry_tokenizer": "byte" (or the vocabulary is 256). Throws naming what is missing.
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& dir, const std::string& config_tokenizer,
                                          int vocab_size);

}  // namespace ferry::moe
