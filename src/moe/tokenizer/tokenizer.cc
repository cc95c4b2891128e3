#include "moe/tokenizer/tokenizer.h"

#include <filesystem>

#include "core/error.h"
#include "moe/tokenizer/bpe_tokenizer.h"
#include "moe/tokenizer/byte_level.h"
#include "moe/tokenizer/gguf_tokenizer.h"

namespace ferry::moe {

std::vector<std::int32_t> ByteTokenizer::encode(const std::string& text) const {
  std::vector<std::int32_t> ids;
  ids.reserve(text.size());
  for (unsigned char c : text) ids.push_back(c);
  return ids;
}

std::string ByteTokenizer::decode(const std::vector<std::int32_t>& ids) const {
  std::string s;
  s.reserve(ids.size());
  for (auto id : ids) s.push_back(static_cast<char>(id & 0xff));
  return s;
}

TokenizerVocab ByteTokenizer::vocabulary() const {
  TokenizerVocab v;
  v.kind = TokenizerVocab::Kind::kBytes;
  for (int b = 0; b < 256; ++b) {
    const char byte = static_cast<char>(b);
    v.tokens.push_back(byte_level_encode(std::string_view(&byte, 1)));
    v.types.push_back(TokenType::kNormal);
  }
  return v;
}

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& dir, const std::string& config_tokenizer,
                                          int vocab_size) {
  if (std::filesystem::is_regular_file(dir)) return load_gguf_tokenizer(quant::GgufFile::open(dir));  // a GGUF model
  const auto sp = std::filesystem::path(dir) / "tokenizer.model";
  const auto hf = std::filesystem::path(dir) / "tokenizer.json";
  if (config_tokenizer == "byte") return std::make_unique<ByteTokenizer>();
  // tokenizer.model before tokenizer.json, although Hugging Face's AutoTokenizer prefers the
  // latter: a checkpoint ships both only when its tokenizer is SentencePiece (Mixtral, Llama 2),
  // and then tokenizer.json is the SentencePiece-style conversion (byte_fallback, Metaspace)
  // that ferry's tokenizer.json reader refuses; the byte-level BPE checkpoints (Qwen2, OLMoE,
  // DeepSeek, GPT-2) ship tokenizer.json alone. Both files describe the same tokenizer.
  if (std::filesystem::exists(sp)) return make_sentencepiece_tokenizer(sp.string());
  if (std::filesystem::exists(hf)) return load_bpe_tokenizer_json(hf.string());
  if (vocab_size == 256) return std::make_unique<ByteTokenizer>();
  FERRY_THROW(IoError, "model directory '", dir,
              "' has neither tokenizer.model nor tokenizer.json and its config does not name a tokenizer");
}

}  // namespace ferry::moe
