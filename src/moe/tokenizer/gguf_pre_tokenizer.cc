#include "moe/tokenizer/gguf_pre_tokenizer.h"

#include <nlohmann/json.hpp>

#include "core/registry.h"

namespace ferry::moe {

namespace {

Registry<GgufPreTokenizerEntry>& pre_tokenizer_registry() {
  static Registry<GgufPreTokenizerEntry> r("GGUF pre-tokenizer");
  return r;
}

// Qwen2's tokenizer.json Split regex (llama.cpp's LLAMA_VOCAB_PRE_TYPE_QWEN2 spells the
// case-insensitive contractions out).
constexpr const char* kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// llama.cpp's LLAMA_VOCAB_PRE_TYPE_DEEPSEEK3_LLM (DeepSeek-V3/R1), applied in turn.
const std::vector<std::string> kDeepSeek3Regexes = {
    R"(\p{N}{1,3})", "[\xe4\xb8\x80-\xe9\xbe\xa5\xe3\x81\x80-\xe3\x82\x9f\xe3\x82\xa0-\xe3\x83\xbf]+",
    R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"};
// llama.cpp's LLAMA_VOCAB_PRE_TYPE_CHATGLM4 (GLM-4.5/4.6).
constexpr const char* kGlm4Regex =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Kimi-K2's regex (tokenization_kimi.py, quoted by llama.cpp's unicode.cpp above its hand-written
// splitter for LLAMA_VOCAB_PRE_TYPE_KIMI_K2): runs of Han characters apart, words of other letters
// (an upper-case run then a lower-case one: CamelCase in two) with their contractions, digits in runs
// of at most three. The original's class intersection [...&&[^\p{Han}]] is a lookahead here.
constexpr const char* kKimiK2Regex =
    R"([\p{Han}]+)"
    R"(|[^\r\n\p{L}\p{N}]?(?:(?!\p{Han})[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}])*(?:(?!\p{Han})[\p{Ll}\p{Lm}\p{Lo}\p{M}])+(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|[^\r\n\p{L}\p{N}]?(?:(?!\p{Han})[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}])+(?:(?!\p{Han})[\p{Ll}\p{Lm}\p{Lo}\p{M}])*(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// llama.cpp's LLAMA_VOCAB_PRE_TYPE_GPT4O (tokenizer.ggml.pre "gpt-4o": GPT-4o's o200k, gpt-oss). The
// regex of o200k's tokenizer.json tells case by Unicode class ([\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]* then
// [\p{Ll}\p{Lm}\p{Lo}\p{M}]+, contractions under (?i:...)); llama.cpp rewrites the classes as "a letter
// not a-z" and "a letter not A-Z" (its matcher sees every non-ASCII letter as one placeholder) and
// spells the contractions' case out. So here a non-ASCII letter is upper- and lower-case at once and a
// combining mark is no letter (it opens the next word as punctuation does): "ÉCOLE" is "É" "COLE"
// (Hugging Face: one piece), "aÉb" one piece ("a" "Éb"), "e", U+0301, "t" is "e" and U+0301 "t" (one
// piece). This entry cuts as llama.cpp does on the same file; a tokenizer.json keeps its own regex,
// which cuts as Hugging Face does.
constexpr const char* kGpt4oRegex =
    R"([^\r\n\p{L}\p{N}]?(?:(?=\p{L})[^a-z])*(?:(?=\p{L})[^A-Z])+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?)"
    R"(|[^\r\n\p{L}\p{N}]?(?:(?=\p{L})[^a-z])+(?:(?=\p{L})[^A-Z])*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?)"
    R"(|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

}  // namespace

void register_builtin_gguf_pre_tokenizers() {
  auto& r = pre_tokenizer_registry();
  r.add_if_absent({"default", "GPT-2's regex (a file without tokenizer.ggml.pre)"});
  r.add_if_absent({"gpt2", "GPT-2's regex"});
  r.add_if_absent({"olmo", "GPT-2's regex (OLMoE)"});
  r.add_if_absent({"qwen2", "Qwen2's regex (Qwen1.5/2/3-MoE)", {kQwen2Regex}});
  r.add_if_absent({"deepseek-v3", "DeepSeek-V3's three regexes in turn", kDeepSeek3Regexes});
  r.add_if_absent({"glm4", "GLM-4's regex (GLM-4.5/4.6)", {kGlm4Regex}});
  r.add_if_absent({"gpt-4o", "GPT-4o's o200k regex as llama.cpp applies it (gpt-oss)", {kGpt4oRegex}});
  r.add_if_absent({"kimi-k2", "Kimi-K2's regex: Han runs apart, CamelCase words with their contractions", {kKimiK2Regex}});
}

const GgufPreTokenizerEntry* find_gguf_pre_tokenizer(const std::string& name) {
  register_builtin_gguf_pre_tokenizers();
  return pre_tokenizer_registry().find(name);
}

std::vector<std::string> gguf_pre_tokenizer_names() {
  register_builtin_gguf_pre_tokenizers();
  return pre_tokenizer_registry().names();
}

nlohmann::json gguf_pre_tokenizer_json(const GgufPreTokenizerEntry& entry) {
  nlohmann::json byte_level = {
      {"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};
  if (entry.regexes.empty()) return byte_level;
  nlohmann::json steps = nlohmann::json::array();
  for (const std::string& regex : entry.regexes)
    steps.push_back({{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", "Isolated"}, {"invert", false}});
  byte_level["use_regex"] = false;
  steps.push_back(byte_level);
  return {{"type", "Sequence"}, {"pretokenizers", steps}};
}

}  // namespace ferry::moe
