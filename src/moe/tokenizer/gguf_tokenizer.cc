#include "moe/tokenizer/gguf_tokenizer.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/excerpt.h"
#include "moe/tokenizer/bpe_tokenizer.h"
#include "moe/tokenizer/byte_level.h"
#include "moe/tokenizer/gguf_pre_tokenizer.h"
#include "moe/tokenizer/spm_tokenizer.h"
#include "moe/tokenizer/utf8.h"

namespace ferry::moe {

using quant::GgufType;
using quant::GgufValue;

namespace {

// Every string is checked to be UTF-8 (a vocabulary's tokens and merges are text; invalid bytes
// would fail deep in the JSON library with no name).
const std::vector<std::string>& gguf_strings(const quant::GgufFile& f, const char* key) {
  const GgufValue& v = f.get(key);
  if (v.type != GgufType::kArray || v.element_type != GgufType::kString)
    FERRY_THROW(FormatError, "GGUF '", f.path(), "': key '", key, "' must be an array of strings");
  for (std::size_t i = 0; i < v.strings.size(); ++i)
    if (const std::size_t at = utf8_invalid_at(v.strings[i]); at < v.strings[i].size())
      FERRY_THROW(FormatError, "GGUF '", f.path(), "': ", key, "[", i, "] '", excerpt(v.strings[i]),
                  "' is not valid UTF-8 (byte ", at, ")");
  return v.strings;
}

// Special token ids (bos, eos, unknown, padding) name a token of the vocabulary: an id past its
// end would index out of it (or, for a byte-level vocabulary, decode as another byte).
void require_special_ids(const quant::GgufFile& f, std::size_t vocab_size) {
  for (const char* key : {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                          "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.padding_token_id"}) {
    const GgufValue* v = f.find(key);
    if (!v) continue;
    if (!v->is_integer())
      FERRY_THROW(FormatError, "GGUF '", f.path(), "': ", key, " must be an integer token id");
    if (v->i < 0 || v->i >= static_cast<std::int64_t>(vocab_size))
      FERRY_THROW(FormatError, "GGUF '", f.path(), "': ", key, " ", v->i, " is outside the vocabulary of ", vocab_size,
                  " tokens");
  }
}

// tokenizer.ggml.token_type, one per token (kNormal when the key is absent).
std::vector<TokenType> gguf_token_types(const quant::GgufFile& f, std::size_t n) {
  std::vector<TokenType> types(n, TokenType::kNormal);
  const GgufValue* v = f.find("tokenizer.ggml.token_type");
  if (!v) return types;
  if (v->type != GgufType::kArray || v->array_size() != n || v->element_type == GgufType::kString)
    FERRY_THROW(FormatError, "GGUF '", f.path(), "': tokenizer.ggml.token_type must hold one integer per token (", n,
                ")");
  for (std::size_t i = 0; i < n; ++i) {
    const double t = v->numbers[i];
    if (t < 1 || t > 6 || t != static_cast<int>(t))
      FERRY_THROW(FormatError, "GGUF '", f.path(), "': tokenizer.ggml.token_type[", i, "] = ", t, " is not 1..6");
    types[i] = static_cast<TokenType>(static_cast<int>(t));
  }
  return types;
}

bool gguf_bool_or(const quant::GgufFile& f, const char* key, bool fallback) {
  const GgufValue* v = f.find(key);
  if (!v) return fallback;
  if (v->type != GgufType::kBool) FERRY_THROW(FormatError, "GGUF '", f.path(), "': key '", key, "' must be a bool");
  return v->b;
}

// llama.cpp's pre-tokenizer of tokenizer.ggml.pre (its registry entry) as a tokenizer.json pre_tokenizer.
nlohmann::json gguf_pre_tokenizer(const quant::GgufFile& f) {
  const GgufValue* v = f.find("tokenizer.ggml.pre");
  const std::string pre = v && v->type == GgufType::kString ? v->s : "default";
  if (const GgufPreTokenizerEntry* entry = find_gguf_pre_tokenizer(pre)) return gguf_pre_tokenizer_json(*entry);
  const std::vector<std::string> names = gguf_pre_tokenizer_names();
  std::string known;
  for (std::size_t i = 0; i < names.size(); ++i)
    known += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  FERRY_THROW(FormatError, "GGUF '", f.path(), "': tokenizer.ggml.pre '", pre, "' is not implemented (ferry builds ",
              known, ")");
}

}  // namespace

bool gguf_byte_vocabulary(const quant::GgufFile& f) {
  const GgufValue* model = f.find("tokenizer.ggml.model");
  if (!model || model->type != GgufType::kString || model->s != "gpt2") return false;
  if (const GgufValue* merges = f.find("tokenizer.ggml.merges"); merges && merges->array_size() != 0) return false;
  const GgufValue* tokens = f.find("tokenizer.ggml.tokens");
  if (!tokens || tokens->type != GgufType::kArray || tokens->element_type != GgufType::kString ||
      tokens->strings.size() < 256)
    return false;
  const std::vector<TokenType> types = gguf_token_types(f, tokens->strings.size());
  for (std::size_t id = 0; id < tokens->strings.size(); ++id) {
    if (id >= 256) {
      if (types[id] != TokenType::kUnused) return false;
      continue;
    }
    const char byte = static_cast<char>(id);
    if (tokens->strings[id] != byte_level_encode(std::string_view(&byte, 1))) return false;
  }
  return true;
}

namespace {

// tokenizer.ggml.model "llama": pieces, scores and types (spm_tokenizer.h).
std::unique_ptr<Tokenizer> load_gguf_spm_tokenizer(const quant::GgufFile& f) {
  if (gguf_bool_or(f, "tokenizer.ggml.remove_extra_whitespaces", false))
    FERRY_THROW(FormatError, "GGUF '", f.path(), "': tokenizer.ggml.remove_extra_whitespaces = true is not implemented");
  if (f.find("tokenizer.ggml.precompiled_charsmap"))
    FERRY_THROW(FormatError, "GGUF '", f.path(), "': tokenizer.ggml.precompiled_charsmap (a normalizer) is not implemented");
  TokenizerVocab v;
  v.kind = TokenizerVocab::Kind::kSentencePiece;
  v.tokens = gguf_strings(f, "tokenizer.ggml.tokens");
  v.types = gguf_token_types(f, v.tokens.size());
  const GgufValue& scores = f.get("tokenizer.ggml.scores");
  if (scores.type != GgufType::kArray || scores.element_type == GgufType::kString || scores.array_size() != v.tokens.size())
    FERRY_THROW(FormatError, "GGUF '", f.path(), "': tokenizer.ggml.scores must hold one number per token (",
                v.tokens.size(), ")");
  v.scores.assign(scores.numbers.begin(), scores.numbers.end());
  // llama.cpp's defaults for this model when the keys are absent: <unk> 0, <s> 1, </s> 2.
  auto token_id = [&](const char* key, int fallback) -> int {
    if (!f.find(key)) return fallback < static_cast<int>(v.tokens.size()) ? fallback : -1;
    const std::int64_t id = f.get_int(key);
    if (id < 0 || id >= static_cast<std::int64_t>(v.tokens.size()))
      FERRY_THROW(FormatError, "GGUF '", f.path(), "': ", key, " ", id, " is not a token");
    return static_cast<int>(id);
  };
  v.bos_id = token_id("tokenizer.ggml.bos_token_id", 1);
  v.eos_id = token_id("tokenizer.ggml.eos_token_id", 2);
  v.unk_id = token_id("tokenizer.ggml.unknown_token_id", 0);
  SpmTokenizerOptions options;
  options.add_space_prefix = gguf_bool_or(f, "tokenizer.ggml.add_space_prefix", true);
  if (gguf_bool_or(f, "tokenizer.ggml.add_bos_token", true)) options.bos_id = v.bos_id;
  return make_spm_tokenizer(std::move(v), options, f.path());
}

}  // namespace

std::unique_ptr<Tokenizer> load_gguf_tokenizer(const quant::GgufFile& f) {
  const std::string model = f.get_string("tokenizer.ggml.model");
  if (model == "llama" || model == "gpt2") require_special_ids(f, gguf_strings(f, "tokenizer.ggml.tokens").size());
  if (model == "llama") return load_gguf_spm_tokenizer(f);
  if (model != "gpt2")
    FERRY_THROW(FormatError, "GGUF '", f.path(), "': tokenizer.ggml.model '", model, "' is not implemented (ferry builds ",
                "llama, SentencePiece-style, and gpt2, byte-level BPE)");
  if (gguf_byte_vocabulary(f)) return std::make_unique<ByteTokenizer>();
  const std::vector<std::string>& tokens = gguf_strings(f, "tokenizer.ggml.tokens");
  const std::vector<TokenType> types = gguf_token_types(f, tokens.size());
  // The tokenizer.json this vocabulary was converted from, as far as the file records it.
  nlohmann::json vocab = nlohmann::json::object(), added = nlohmann::json::array();
  for (std::size_t id = 0; id < tokens.size(); ++id) {
    switch (types[id]) {
      case TokenType::kNormal: vocab[tokens[id]] = id; break;
      case TokenType::kControl:
      case TokenType::kUserDefined: {
        const bool special = types[id] == TokenType::kControl;
        added.push_back({{"id", id}, {"content", tokens[id]}, {"single_word", false}, {"lstrip", false},
                         {"rstrip", false}, {"normalized", !special}, {"special", special}});
        break;
      }
      case TokenType::kUnused: break;
      default:
        FERRY_THROW(FormatError, "GGUF '", f.path(), "': token ", id, " '", tokens[id], "' has type ",
                    static_cast<int>(types[id]), ", which a gpt2 vocabulary does not have");
    }
  }
  nlohmann::json merges = nlohmann::json::array();
  if (f.find("tokenizer.ggml.merges"))
    for (const std::string& m : gguf_strings(f, "tokenizer.ggml.merges")) merges.push_back(m);
  nlohmann::json post = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}};
  if (gguf_bool_or(f, "tokenizer.ggml.add_bos_token", false)) {
    const std::int64_t bos = f.get_int("tokenizer.ggml.bos_token_id");
    if (bos < 0 || bos >= static_cast<std::int64_t>(tokens.size()))
      FERRY_THROW(FormatError, "GGUF '", f.path(), "': tokenizer.ggml.bos_token_id ", bos, " is not a token");
    const std::string& name = tokens[static_cast<std::size_t>(bos)];
    post = {{"type", "TemplateProcessing"},
            {"single", {{{"SpecialToken", {{"id", name}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
            {"pair", nlohmann::json::array()},
            {"special_tokens", {{name, {{"id", name}, {"ids", {bos}}, {"tokens", {name}}}}}}};
  }
  const nlohmann::json j = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added},
      {"normalizer", nullptr},
      {"pre_tokenizer", gguf_pre_tokenizer(f)},
      {"post_processor", post},
      {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}}},
      {"model",
       {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", nullptr},
        {"end_of_word_suffix", nullptr}, {"fuse_unk", false}, {"byte_fallback", false}, {"ignore_merges", false},
        {"vocab", vocab}, {"merges", merges}}}};
  return parse_bpe_tokenizer_json(j.dump(), f.path());
}

}  // namespace ferry::moe
