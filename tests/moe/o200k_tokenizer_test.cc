// gpt-oss's tokenizer (o200k). The GGUF pre-tokenizer "gpt-4o" cuts a varied text set (cases,
// contractions, digit runs, CJK, accents, emoji, whitespace runs, newlines) as Hugging Face's rules
// cut it with the Split regex of o200k's tokenizer.json, and as llama.cpp cuts it where the two
// differ (gguf_pre_tokenizer.cc). A GGUF byte-level BPE vocabulary under "gpt-4o" gives llama.cpp's
// ids for every text (LlamaCppTokenizer: FERRY_LLAMA_TOKENIZE names tests/moe/peers/llama_tokenize,
// which tokenize_vs_llama.sh builds against llama.cpp's libraries; skipped without). No libtorch.
#include <stdlib.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "moe/quant/gguf_file.h"
#include "moe/quant/gguf_writer.h"
#include "moe/tokenizer/byte_level.h"
#include "moe/tokenizer/chat_template.h"
#include "moe/tokenizer/gguf_pre_tokenizer.h"
#include "moe/tokenizer/gguf_tokenizer.h"
#include "moe/tokenizer/pre_tokenizer.h"

namespace ferry::moe {
namespace {

using V = std::vector<std::string>;
using Ids = std::vector<std::int32_t>;

// The Split regex of gpt-oss's (and GPT-4o's) tokenizer.json, before a ByteLevel without its own.
constexpr const char* kO200kRegex =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Texts that llama.cpp and Hugging Face cut alike.
const V kTexts = {
    "Hello world! HelloWorld HELLO WORLD hELLO iPhone McDonald's XMLHttpRequest",
    "it's I'm you're we've they'd she'll IT'S I'M YOU'RE WE'VE THEY'D SHE'LL It'S don't'll",
    "1 12 123 1234 12345 1234567 3.14159 x2y 2024-06-01 v1.2.3 ١٢٣٤",
    "你好，世界！日本語のテキスト、カタカナ 한국어 텍스트 中文English混合",
    "café naïve résumé Ångström über Straße CAFÉ Москва МОСКВА Ελληνικά",
    "emoji 😀👍🏽 👨‍👩‍👧 🇫🇷! ✨✨ ☕️",
    "  leading and trailing  \t\ttabs   \n\n\nnewlines\r\nCRLF \n  x\n",
    "path/to/file.txt http://example.com/a?b=c /* comment */\n// done\n...!!!\n\n",
    "non-breaking\u00a0space and\u3000ideographic,\u2003em space",
    "",
    " ",
    "a",
};
// Texts that they cut apart: a non-ASCII capital after letters or before others, combining marks.
const V kLlamaOnlyTexts = {"ÉCOLE aÉb ÀB", "e\u0301te\u0301 cafe\u0301", "नमस्ते दुनिया", "ÜBER DAS ÖL"};

V split_with(const nlohmann::json& pre, const std::string& text) {
  PreTokenizer p(pre, JsonPlace{"o200k", "pre_tokenizer"}, Pcre2Options{});
  V out;
  p.split(text, out);
  return out;
}

V gpt4o_pieces(const std::string& text) {
  const GgufPreTokenizerEntry* entry = find_gguf_pre_tokenizer("gpt-4o");
  if (entry == nullptr) {
    ADD_FAILURE() << "no GGUF pre-tokenizer 'gpt-4o'";
    return {};
  }
  return split_with(gguf_pre_tokenizer_json(*entry), text);
}

// As gpt-oss's tokenizer.json writes it.
V o200k_json_pieces(const std::string& text) {
  const nlohmann::json split = {
      {"type", "Split"}, {"pattern", {{"Regex", kO200kRegex}}}, {"behavior", "Isolated"}, {"invert", false}};
  const nlohmann::json byte_level = {
      {"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}};
  return split_with({{"type", "Sequence"}, {"pretokenizers", {split, byte_level}}}, text);
}

TEST(O200kPreTokenizer, Gpt4oCutsAsTokenizerJsonsRegex) {
  for (const std::string& text : kTexts) EXPECT_EQ(gpt4o_pieces(text), o200k_json_pieces(text)) << text;
  // A few worked out by hand: a capital opens a word, a contraction stays with its word in either
  // case, digits go by three, a space joins the word after it, punctuation before a word joins it.
  EXPECT_EQ(gpt4o_pieces("HelloWorld's HELLO iPhone THEY'LL"),
            (V{"Hello", "World's", " HELLO", " i", "Phone", " THEY'LL"}));
  EXPECT_EQ(gpt4o_pieces("12345 1234567"), (V{"123", "45", " ", "123", "456", "7"}));
  EXPECT_EQ(gpt4o_pieces("a  \n\n  b"), (V{"a", "  \n\n", " ", " b"}));
  EXPECT_EQ(gpt4o_pieces("你好，世界"), (V{"你好", "，世界"}));
  EXPECT_EQ(gpt4o_pieces("a/b//\nc"), (V{"a", "/b", "//\n", "c"}));
}

// llama.cpp's regex, not the file's, where they part (gguf_pre_tokenizer.cc): a non-ASCII letter counts
// as a capital and as a small letter, a combining mark as punctuation.
TEST(O200kPreTokenizer, Gpt4oCutsAsLlamaCppWhereTheRegexesPart) {
  EXPECT_EQ(gpt4o_pieces("ÉCOLE aÉb"), (V{"É", "COLE", " aÉb"}));
  EXPECT_EQ(o200k_json_pieces("ÉCOLE aÉb"), (V{"ÉCOLE", " a", "Éb"}));
  EXPECT_EQ(gpt4o_pieces("e\u0301t"), (V{"e", "\u0301t"}));  // the mark opens the next word as punctuation does
  EXPECT_EQ(o200k_json_pieces("e\u0301t"), (V{"e\u0301t"}));
}

const std::vector<const char*> kHarmonySpecials = {"<|endoftext|>", "<|start|>", "<|message|>", "<|end|>",
                                                   "<|channel|>",   "<|return|>", "<|call|>"};

struct BpeVocab {
  std::vector<std::string> tokens, merges;
  std::vector<std::int32_t> types;
};

// A byte-level BPE vocabulary in which every cut shows: the 256 byte symbols; merges joining the bytes
// of each character of `texts`; merges learnt on the pieces that "gpt-4o" cuts the texts into (the
// runs between special tokens), the most frequent adjacent pair first (ties: the smaller pair), until
// each piece is one token; then one merge of each two neighbouring pieces, ranked after those; then the
// harmony format's special tokens (control). So a cut inside a piece leaves it in several tokens, and a
// missing cut joins two pieces into one.
BpeVocab learn_vocab(const V& texts) {
  BpeVocab v;
  std::set<std::string> known;
  const auto add_token = [&](const std::string& t, std::int32_t type) {
    if (known.insert(t).second) {
      v.tokens.push_back(t);
      v.types.push_back(type);
    }
  };
  for (int b = 0; b < 256; ++b) add_token(byte_level_encode(std::string(1, static_cast<char>(b))), 1);
  std::set<std::string> merged;
  const auto add_merge = [&](const std::string& a, const std::string& b) {
    if (merged.insert(a + " " + b).second) v.merges.push_back(a + " " + b);
    add_token(a + b, 1);
  };
  std::vector<std::vector<V>> runs;  // each run's pieces, each piece as symbols
  for (const std::string& text : texts) {
    for (std::size_t begin = 0;;) {
      std::size_t at = std::string::npos, len = 0;
      for (const char* special : kHarmonySpecials)
        if (const std::size_t p = text.find(special, begin); p < at) at = p, len = std::strlen(special);
      std::vector<V> run;
      for (const std::string& piece : gpt4o_pieces(text.substr(begin, at == std::string::npos ? at : at - begin))) {
        V symbols;  // one per character
        for (std::size_t i = 0; i < piece.size();) {
          const unsigned char lead = static_cast<unsigned char>(piece[i]);
          const std::size_t n = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
          std::string sym = byte_level_encode(piece.substr(i, 1));
          for (std::size_t k = 1; k < n; ++k) {
            const std::string next = byte_level_encode(piece.substr(i + k, 1));
            add_merge(sym, next);
            sym += next;
          }
          symbols.push_back(sym);
          i += n;
        }
        run.push_back(symbols);
      }
      runs.push_back(run);
      if (at == std::string::npos) break;
      begin = at + len;
    }
  }
  for (;;) {
    std::map<std::pair<std::string, std::string>, int> counts;
    for (const std::vector<V>& run : runs)
      for (const V& s : run)
        for (std::size_t i = 0; i + 1 < s.size(); ++i) ++counts[{s[i], s[i + 1]}];
    if (counts.empty()) break;
    auto best = counts.begin();
    for (auto it = counts.begin(); it != counts.end(); ++it)
      if (it->second > best->second) best = it;
    const auto [a, b] = best->first;
    add_merge(a, b);
    for (std::vector<V>& run : runs)
      for (V& s : run) {
        V joined;
        for (std::size_t i = 0; i < s.size(); ++i) {
          const bool pair = i + 1 < s.size() && s[i] == a && s[i + 1] == b;
          joined.push_back(pair ? a + b : s[i]);
          i += pair;
        }
        s = std::move(joined);
      }
  }
  for (const std::vector<V>& run : runs)
    for (std::size_t i = 0; i + 1 < run.size(); ++i) add_merge(run[i].back(), run[i + 1].front());
  for (const char* special : kHarmonySpecials) add_token(special, 3);
  return v;
}

void write_gguf(const std::string& path, const BpeVocab& v, const std::string& pre) {
  quant::GgufWriter w;
  w.add_string("general.architecture", "llama");
  w.add_string("tokenizer.ggml.model", "gpt2");
  w.add_string("tokenizer.ggml.pre", pre);
  w.add_strings("tokenizer.ggml.tokens", v.tokens);
  w.add_i32s("tokenizer.ggml.token_type", v.types);
  w.add_strings("tokenizer.ggml.merges", v.merges);
  w.write(path);
}

std::vector<Ids> ferry_ids(const std::string& path, const V& texts) {
  const auto tokenizer = load_gguf_tokenizer(quant::GgufFile::open(path));
  std::vector<Ids> out;
  for (const std::string& text : texts) out.push_back(tokenizer->encode(text));
  return out;
}

// The peer's ids: one line per text.
std::vector<Ids> llama_ids(const std::string& tool, const std::string& gguf, const std::string& texts_path) {
  const std::string cmd = "'" + tool + "' '" + gguf + "' '" + texts_path + "' 2>/dev/null";
  std::FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return {};
  std::string out;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) out.append(buf, n);
  if (pclose(pipe) != 0) ADD_FAILURE() << cmd << " failed";
  std::vector<Ids> ids;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    Ids row;
    for (std::int32_t id; words >> id;) row.push_back(id);
    ids.push_back(row);
  }
  return ids;
}

TEST(LlamaCppTokenizer, Gpt4oVocabularyGivesLlamaCppsIds) {
  const char* tool = std::getenv("FERRY_LLAMA_TOKENIZE");
  if (tool == nullptr || *tool == '\0') GTEST_SKIP() << "FERRY_LLAMA_TOKENIZE (tests/moe/peers/llama_tokenize) unset";
  V texts = kTexts;
  texts.insert(texts.end(), kLlamaOnlyTexts.begin(), kLlamaOnlyTexts.end());
  texts.push_back(chat_template("gpt-oss").render({{"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello"}}));
  std::string dir_template = (std::filesystem::temp_directory_path() / "ferry_o200k_XXXXXX").string();
  ASSERT_NE(mkdtemp(dir_template.data()), nullptr);
  const std::filesystem::path dir = dir_template;
  const BpeVocab vocab = learn_vocab(texts);
  write_gguf((dir / "gpt4o.gguf").string(), vocab, "gpt-4o");
  write_gguf((dir / "gpt2.gguf").string(), vocab, "gpt2");
  {
    std::ofstream f(dir / "texts", std::ios::binary);
    for (std::size_t i = 0; i < texts.size(); ++i) f << (i == 0 ? "" : std::string(1, '\0')) << texts[i];
  }
  const std::vector<Ids> llama = llama_ids(tool, (dir / "gpt4o.gguf").string(), (dir / "texts").string());
  const std::vector<Ids> ferry = ferry_ids((dir / "gpt4o.gguf").string(), texts);
  ASSERT_EQ(llama.size(), texts.size());
  for (std::size_t i = 0; i < texts.size(); ++i) EXPECT_EQ(ferry[i], llama[i]) << "text " << i << ": " << texts[i];
  // The vocabulary shows the cuts: GPT-2's pre-tokenizer, which cuts most of these texts elsewhere,
  // gives other ids for every text it cuts elsewhere.
  const GgufPreTokenizerEntry* gpt2 = find_gguf_pre_tokenizer("gpt2");
  ASSERT_NE(gpt2, nullptr);
  const std::vector<Ids> gpt2_ids = ferry_ids((dir / "gpt2.gguf").string(), texts);
  int cut_elsewhere = 0;
  for (std::size_t i = 0; i < texts.size(); ++i)
    if (split_with(gguf_pre_tokenizer_json(*gpt2), texts[i]) != gpt4o_pieces(texts[i])) {
      ++cut_elsewhere;
      EXPECT_NE(gpt2_ids[i], llama[i]) << "text " << i << ": " << texts[i];
    }
  EXPECT_GT(cut_elsewhere, static_cast<int>(texts.size()) / 2);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace
}  // namespace ferry::moe
