#include "moe/model/tokenizer.h"

#include <filesystem>

#include "core/error.h"

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

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& dir, const std::string& config_tokenizer,
                                          int vocab_size) {
  const auto sp = std::filesystem::path(dir) / "tokenizer.model";
  if (config_tokenizer == "byte") return std::make_unique<ByteTokenizer>();
  if (std::filesystem::exists(sp)) return make_sentencepiece_tokenizer(sp.string());
  if (vocab_size == 256) return std::make_unique<ByteTokenizer>();
  FERRY_THROW(IoError, "model directory '", dir, "' has no tokenizer.model and its config does not name a tokenizer");
}

}  // namespace ferry::moe
