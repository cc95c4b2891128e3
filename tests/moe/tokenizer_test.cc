// The tokenizer.json reader (moe/tokenizer/bpe_tokenizer.h): ids worked out by hand from the BPE
// rules for a small vocabulary (256 byte symbols with id = byte value, 14 merges, 3 added
// tokens) under the Qwen2-style Split + ByteLevel pre-tokenizer and GPT-2's ByteLevel regex;
// exact round trips over random bytes; both merges layouts; one FormatError naming the problem
// for each malformed file; load_tokenizer's choice of file. No libtorch.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "moe/tokenizer/bpe_tokenizer.h"
#include "moe/tokenizer/byte_level.h"
#include "moe/tokenizer/gguf_pre_tokenizer.h"
#include "moe/tokenizer/pre_tokenizer.h"
#include "moe/tokenizer/spm_tokenizer.h"
#include "moe/tokenizer/tokenizer.h"

namespace ferry::moe {
namespace {

using nlohmann::json;
using Ids = std::vector<std::int32_t>;

// GPT-2's bytes_to_unicode, written out again here (encoder.py) so that the test's vocabulary
// does not come from the code under test.
std::string gpt2_symbol(int b) {
  std::vector<int> bs;
  for (int c = '!'; c <= '~'; ++c) bs.push_back(c);
  for (int c = 0xA1; c <= 0xAC; ++c) bs.push_back(c);
  for (int c = 0xAE; c <= 0xFF; ++c) bs.push_back(c);
  int cp = -1, n = 0;
  for (int c = 0; c < 256; ++c) {
    const bool printable = std::find(bs.begin(), bs.end(), c) != bs.end();
    if (c == b) cp = printable ? c : 256 + n;
    if (!printable) ++n;
  }
  std::string s;  // UTF-8 of cp (< U+0800)
  if (cp < 0x80) {
    s.push_back(static_cast<char>(cp));
  } else {
    s.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
  return s;
}

// The merges, rank = index; the merged token of rank r gets id 256 + r.
const std::vector<std::pair<std::string, std::string>> kMerges = {
    {"Ġ", "t"},    // 256 Ġt
    {"l", "l"},    // 257 ll
    {"e", "ll"},   // 258 ell
    {"h", "ell"},  // 259 hell
    {"hell", "o"}, // 260 hello
    {"h", "e"},    // 261 he
    {"Ġt", "he"},  // 262 Ġthe
    {"'", "s"},    // 263 's
    {"1", "2"},    // 264 12
    {"Ã", "©"},    // 265 Ã© (é = C3 A9)
    {"Ċ", "Ċ"},    // 266 ĊĊ ("\n\n")
    {"Ġ", "Ġ"},    // 267 ĠĠ ("  ")
    {"h", "Ã©"},   // 268 hÃ© ("hé")
    {"Ġ", "h"},    // 269 Ġh
};

constexpr const char* kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

json qwen2_pre_tokenizer() {
  return {{"type", "Sequence"},
          {"pretokenizers",
           {{{"type", "Split"}, {"pattern", {{"Regex", kQwen2Regex}}}, {"behavior", "Isolated"}, {"invert", false}},
            {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}}}}};
}

json gpt2_pre_tokenizer(bool add_prefix_space = false) {
  return {{"type", "ByteLevel"}, {"add_prefix_space", add_prefix_space}, {"trim_offsets", true}, {"use_regex", true}};
}

// A tokenizer.json as tokenizers writes it; `pair_merges`: the ["a", "b"] layout of >= 0.20.
json make_json(const json& pre_tokenizer, bool pair_merges = false) {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[gpt2_symbol(b)] = b;
  json merges = json::array();
  for (std::size_t r = 0; r < kMerges.size(); ++r) {
    const auto& [a, b] = kMerges[r];
    vocab[a + b] = 256 + static_cast<int>(r);
    if (pair_merges) merges.push_back(json::array({a, b}));
    else merges.push_back(a + " " + b);
  }
  vocab["xyz"] = 290;  // reachable by no merge: only ignore_merges emits it
  const json added = json::array({
      {{"id", 300}, {"content", "<|endoftext|>"}, {"single_word", false}, {"lstrip", false}, {"rstrip", false},
       {"normalized", false}, {"special", true}},
      {{"id", 301}, {"content", "<tool>"}, {"single_word", false}, {"lstrip", true}, {"rstrip", false},
       {"normalized", true}, {"special", false}},
      {{"id", 302}, {"content", "<|end"}, {"single_word", false}, {"lstrip", false}, {"rstrip", false},
       {"normalized", false}, {"special", false}},
  });
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", added},
          {"normalizer", nullptr},
          {"pre_tokenizer", pre_tokenizer},
          {"model",
           {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", ""},
            {"end_of_word_suffix", ""}, {"fuse_unk", false}, {"byte_fallback", false}, {"ignore_merges", false},
            {"vocab", vocab}, {"merges", merges}}},
          {"post_processor",
           {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}}},
          {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}}};
}

std::unique_ptr<Tokenizer> parse(const json& j, const BpeTokenizerOptions& o = {}) {
  return parse_bpe_tokenizer_json(j.dump(), "test.json", o);
}

// The FormatError message of parsing `text`, or "" when it parsed.
std::string error_of(const std::string& text) {
  try {
    parse_bpe_tokenizer_json(text, "bad/tokenizer.json");
  } catch (const FormatError& e) {
    return e.what();
  }
  return "";
}

TEST(ByteLevel, AlphabetIsGpt2s) {
  for (int b = 0; b < 256; ++b) {
    const char c = static_cast<char>(b);
    EXPECT_EQ(byte_level_encode(std::string(1, c)), gpt2_symbol(b)) << "byte " << b;
  }
  EXPECT_EQ(byte_level_encode(" \n"), "ĠĊ");
  EXPECT_EQ(byte_level_encode(std::string(1, '\0')), "Ā");      // U+0100
  EXPECT_EQ(byte_level_encode("\x7f"), "ġ");                    // U+0121
  EXPECT_EQ(byte_level_encode("\xad"), "Ń");                    // U+0143, the last one
  std::string out;
  EXPECT_FALSE(byte_level_decode("Ġx€", out));  // € is outside the alphabet
  EXPECT_TRUE(out.empty());
}

TEST(BpeTokenizer, Qwen2StyleIdsWorkedOutByHand) {
  auto t = parse(make_json(qwen2_pre_tokenizer()));
  EXPECT_EQ(t->name(), "bpe");
  EXPECT_EQ(t->vocab_size(), 303);
  EXPECT_EQ(t->bos_id(), -1);
  // ll (rank 1) first, then ell, hell, hello: h-e (rank 5) never gets its turn.
  EXPECT_EQ(t->encode("hello"), (Ids{260}));
  // "the" | " hello": the space joins the letters; in "the" only h-e merges.
  EXPECT_EQ(t->encode("the hello"), (Ids{116, 261, 32, 260}));
  // Ġ-t (rank 0), h-e (5), then Ġt-he (6).
  EXPECT_EQ(t->encode(" the"), (Ids{262}));
  // Qwen2's regex takes digits one by one, so 1-2 never merges.
  EXPECT_EQ(t->encode("12345"), (Ids{49, 50, 51, 52, 53}));
  // Contractions, case-insensitive: "'S" is one piece but has no merge.
  EXPECT_EQ(t->encode("he's"), (Ids{261, 263}));
  EXPECT_EQ(t->encode("HE'S"), (Ids{72, 69, 39, 83}));
  // \s*[\r\n]+ keeps the newlines together ("a" | "\n\n" | "b"), and with a space before them.
  EXPECT_EQ(t->encode("a\n\nb"), (Ids{97, 266, 98}));
  EXPECT_EQ(t->encode("a \n\n b"), (Ids{97, 32, 266, 32, 98}));
  // \s+(?!\S) leaves the last space to the next word: "a" | "  " | " b".
  EXPECT_EQ(t->encode("a   b"), (Ids{97, 267, 32, 98}));
  EXPECT_EQ(t->encode("a  "), (Ids{97, 267}));
  // é is a letter (one piece); l-l, then Ã-©, then h-Ã©.
  EXPECT_EQ(t->encode("h\xc3\xa9llo"), (Ids{268, 257, 111}));
  // U+1F600 is F0 9F 98 80: four byte symbols, no merges.
  EXPECT_EQ(t->encode("\xf0\x9f\x98\x80"), (Ids{240, 159, 152, 128}));
  EXPECT_EQ(t->encode(""), Ids{});
}

TEST(BpeTokenizer, AddedTokensAreFoundBeforePreTokenization) {
  auto t = parse(make_json(qwen2_pre_tokenizer()));
  EXPECT_EQ(t->encode("hi<|endoftext|>the"), (Ids{104, 105, 300, 116, 261}));
  // Longest first: <|endoftext|> over its prefix <|end, which matches on its own elsewhere.
  EXPECT_EQ(t->encode("<|endoftext|>"), (Ids{300}));
  EXPECT_EQ(t->encode("x<|end y"), (Ids{120, 302, 32, 121}));
  // <tool> has lstrip: it swallows the space before it.
  EXPECT_EQ(t->encode("a <tool>b"), (Ids{97, 301, 98}));
  // decode gives the contents back, special tokens included.
  EXPECT_EQ(t->decode({104, 105, 300, 116, 261}), "hi<|endoftext|>the");
  EXPECT_EQ(t->decode({97, 301, 98}), "a<tool>b");
}

TEST(BpeTokenizer, Gpt2ByteLevelRegexIdsWorkedOutByHand) {
  auto t = parse(make_json(gpt2_pre_tokenizer()));
  EXPECT_EQ(t->encode("the hello"), (Ids{116, 261, 32, 260}));
  // " ?\p{N}+" keeps the digits together: 1-2 merges.
  EXPECT_EQ(t->encode("12345"), (Ids{264, 51, 52, 53}));
  EXPECT_EQ(t->encode("he's"), (Ids{261, 263}));
  // \s+(?!\S) then \s+: each newline alone ("a" | "\n" | "\n" | "b"), so Ċ-Ċ never merges.
  EXPECT_EQ(t->encode("a\n\nb"), (Ids{97, 10, 10, 98}));
  EXPECT_EQ(t->encode("a   b"), (Ids{97, 267, 32, 98}));
  EXPECT_EQ(t->encode("h\xc3\xa9llo"), (Ids{268, 257, 111}));
  EXPECT_EQ(t->encode(" the\n"), (Ids{262, 10}));

  auto prefixed = parse(make_json(gpt2_pre_tokenizer(true)));
  EXPECT_EQ(prefixed->encode("hello"), (Ids{32, 260}));  // " hello"
  EXPECT_EQ(prefixed->encode(" the"), (Ids{262}));       // already starts with a space
}

TEST(BpeTokenizer, IgnoreMergesEmitsAWholeVocabularyEntry) {
  json j = make_json(qwen2_pre_tokenizer());
  EXPECT_EQ(parse(j)->encode("xyz"), (Ids{120, 121, 122}));
  j["model"]["ignore_merges"] = true;
  EXPECT_EQ(parse(j)->encode("xyz"), (Ids{290}));
  EXPECT_EQ(parse(j)->encode("hello"), (Ids{260}));
}

TEST(BpeTokenizer, NfcNormalizerComposesBeforeEncoding) {
  json j = make_json(qwen2_pre_tokenizer());
  const std::string decomposed = "e\xcc\x81";  // e + U+0301 COMBINING ACUTE ACCENT
  EXPECT_EQ(parse(j)->encode(decomposed), (Ids{101, 204, 129}));
  j["normalizer"] = {{"type", "NFC"}};
  auto t = parse(j);
  EXPECT_EQ(t->encode(decomposed), (Ids{265}));  // é = C3 A9 -> Ã©
  EXPECT_EQ(t->decode(t->encode(decomposed)), "\xc3\xa9");
}

TEST(BpeTokenizer, TemplateProcessingGivesTheBos) {
  json j = make_json(qwen2_pre_tokenizer());
  const json tmpl = {
      {"type", "TemplateProcessing"},
      {"single", {{{"SpecialToken", {{"id", "<|endoftext|>"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
      {"pair", json::array()},
      {"special_tokens", {{"<|endoftext|>", {{"id", "<|endoftext|>"}, {"ids", {300}}, {"tokens", {"<|endoftext|>"}}}}}}};
  j["post_processor"] = tmpl;
  EXPECT_EQ(parse(j)->bos_id(), 300);
  EXPECT_EQ(parse(j)->encode("hello"), (Ids{260}));  // encode itself never adds it
  j["post_processor"] = {{"type", "Sequence"},
                         {"processors", {{{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false},
                                          {"use_regex", false}}, tmpl}}};
  EXPECT_EQ(parse(j)->bos_id(), 300);
}

TEST(BpeTokenizer, BothMergesLayoutsGiveTheSameIds) {
  auto strings = parse(make_json(qwen2_pre_tokenizer(), false));
  auto pairs = parse(make_json(qwen2_pre_tokenizer(), true));
  for (const char* s : {"hello", "the hello", " the", "he's", "a\n\nb", "h\xc3\xa9llo", "12 hell o"})
    EXPECT_EQ(strings->encode(s), pairs->encode(s)) << s;
  EXPECT_EQ(pairs->encode("hello"), (Ids{260}));
}

std::string random_bytes(std::mt19937& rng, std::size_t n) {
  // Mostly the bytes the merges and regexes care about, so that merges and splits happen.
  static const std::string common = "hello the's12\n \xc3\xa9<|>tool";
  std::string s;
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned r = rng() % 4;
    s.push_back(r == 0 ? static_cast<char>(rng() % 256) : common[rng() % common.size()]);
  }
  return s;
}

std::string random_utf8(std::mt19937& rng, std::size_t n) {
  static const std::vector<std::pair<char32_t, char32_t>> ranges = {
      {0x20, 0x7E}, {0x09, 0x0D}, {0xA0, 0x17F}, {0x300, 0x36F}, {0x4E00, 0x4E80}, {0x3040, 0x30FF},
      {0x1F600, 0x1F64F}, {0x2000, 0x200B}, {0x660, 0x669}};
  std::string s;
  for (std::size_t i = 0; i < n; ++i) {
    const auto& [lo, hi] = ranges[rng() % ranges.size()];
    const char32_t cp = lo + rng() % (hi - lo + 1);
    if (cp < 0x80) {
      s.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      s.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      s.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      s.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      s.push_back(static_cast<char>(0xF0 | (cp >> 18)));
      s.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      s.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }
  return s;
}

TEST(BpeTokenizer, DecodeOfEncodeIsExactForAnyBytes) {
  std::mt19937 rng(20261201);
  const std::vector<std::string> added = {"<|endoftext|>", "<tool>", "<|end"};
  for (const json& pre : {qwen2_pre_tokenizer(), gpt2_pre_tokenizer()}) {
    json j = make_json(pre);
    j["added_tokens"][1]["lstrip"] = false;  // lstrip drops the space before <tool> by design
    auto t = parse(j);
    for (int i = 0; i < 400; ++i) {
      std::string s = i % 2 ? random_bytes(rng, rng() % 80) : random_utf8(rng, rng() % 40);
      if (i % 3 == 0) s.insert(rng() % (s.size() + 1), added[rng() % added.size()]);
      const Ids ids = t->encode(s);
      for (auto id : ids) ASSERT_TRUE(id >= 0 && id < t->vocab_size()) << id;
      ASSERT_EQ(t->decode(ids), s) << "input of " << s.size() << " bytes, case " << i;
    }
    const std::string nul_and_invalid("a\0b\xff\xfe\xc3(\xed\xa0\x80\xf4\x90\x80\x80 \xe4\xbd", 19);
    EXPECT_EQ(t->decode(t->encode(nul_and_invalid)), nul_and_invalid);
  }
}

TEST(BpeTokenizer, InvalidUtf8BytesArePreTokensOfTheirOwn) {
  auto t = parse(make_json(qwen2_pre_tokenizer()));
  // "he" | FF | "llo": the invalid byte cuts the word, so hello cannot form.
  EXPECT_EQ(t->encode("he\xffllo"), (Ids{261, 255, 257, 111}));
  // é whole merges; its two bytes swapped are one run of two invalid bytes, with no merge.
  EXPECT_EQ(t->encode("\xc3\xa9"), (Ids{265}));
  EXPECT_EQ(t->encode("\xa9\xc3"), (Ids{169, 195}));
}

TEST(BpeTokenizer, JitAndInterpreterAgree) {
  BpeTokenizerOptions no_jit;
  no_jit.regex.jit = false;
  auto jit = parse(make_json(qwen2_pre_tokenizer()));
  auto interp = parse(make_json(qwen2_pre_tokenizer()), no_jit);
  std::mt19937 rng(5);
  for (int i = 0; i < 200; ++i) {
    const std::string s = random_utf8(rng, rng() % 60);
    ASSERT_EQ(jit->encode(s), interp->encode(s)) << i;
  }
}

// Each pre-token as text, for the split behaviours.
std::vector<std::string> pieces(const json& split, const std::string& text) {
  const json pre = {{"type", "Sequence"},
                    {"pretokenizers", {split, {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}};
  PreTokenizer p(pre, JsonPlace{"t.json", "pre_tokenizer"}, Pcre2Options{});
  std::vector<std::string> out;
  p.split(text, out);
  return out;
}

TEST(PreTokenizer, SplitBehavioursFollowNormalizedStringSplit) {
  using V = std::vector<std::string>;
  const auto split = [](const char* behavior, bool invert = false) {
    return json{{"type", "Split"}, {"pattern", {{"String", "-"}}}, {"behavior", behavior}, {"invert", invert}};
  };
  // Matches at 1, 3, 4 of "a-b--c".
  EXPECT_EQ(pieces(split("Isolated"), "a-b--c"), (V{"a", "-", "b", "-", "-", "c"}));
  EXPECT_EQ(pieces(split("Removed"), "a-b--c"), (V{"a", "b", "c"}));
  EXPECT_EQ(pieces(split("MergedWithPrevious"), "a-b--c"), (V{"a-", "b-", "-", "c"}));
  EXPECT_EQ(pieces(split("MergedWithNext"), "a-b--c"), (V{"a", "-b", "-", "-c"}));
  EXPECT_EQ(pieces(split("Contiguous"), "a-b--c"), (V{"a", "-", "b", "--", "c"}));
  EXPECT_EQ(pieces(split("Removed", true), "a-b--c"), (V{"-", "-", "-"}));
  // A String pattern is literal: "." is no wildcard.
  EXPECT_EQ(pieces({{"type", "Split"}, {"pattern", {{"String", "."}}}, {"behavior", "Isolated"}}, "a.b"),
            (V{"a", ".", "b"}));
  EXPECT_EQ(pieces({{"type", "Digits"}, {"individual_digits", true}}, "ab12c3"), (V{"ab", "1", "2", "c", "3"}));
  EXPECT_EQ(pieces({{"type", "Digits"}, {"individual_digits", false}}, "ab12c3"), (V{"ab", "12", "c", "3"}));
}

// tokenizer.ggml.pre's registry: each entry cuts text as llama.cpp's pre-tokenizer of that name
// (GPT-2's regex: a space joins the run after it; qwen2's: digits one by one, the space alone).
TEST(GgufPreTokenizer, EntriesSplitAsTheirRegexes) {
  using V = std::vector<std::string>;
  const auto split = [](const std::string& name, const std::string& text) {
    const GgufPreTokenizerEntry* entry = find_gguf_pre_tokenizer(name);
    if (entry == nullptr) {
      ADD_FAILURE() << "no GGUF pre-tokenizer '" << name << "'";
      return V{};
    }
    PreTokenizer p(gguf_pre_tokenizer_json(*entry), JsonPlace{"t.gguf", "pre_tokenizer"}, Pcre2Options{});
    V out;
    p.split(text, out);
    return out;
  };
  for (const char* gpt2 : {"default", "gpt2", "olmo"})
    EXPECT_EQ(split(gpt2, "it's 123 ok"), (V{"it", "'s", " 123", " ok"})) << gpt2;
  EXPECT_EQ(split("qwen2", "it's 123 ok"), (V{"it", "'s", " ", "1", "2", "3", " ok"}));
  // GLM-4's and DeepSeek-V3's: digits in runs of at most three (DeepSeek-V3's first regex cuts
  // them out before its word regex runs on the rest).
  EXPECT_EQ(split("glm4", "it's 12345 ok"), (V{"it", "'s", " ", "123", "45", " ok"}));
  EXPECT_EQ(split("deepseek-v3", "it's 12345 ok"), (V{"it", "'s", " ", "123", "45", " ok"}));
  EXPECT_EQ(split("deepseek-v3", "(x)y"), (V{"(x", ")y"}));  // punctuation opens a word after it
  // Kimi-K2's: a word keeps its contraction, CamelCase splits at the case change, an all-caps word
  // stays whole, Han runs stand apart from the letters after them (kana are not Han), digits by three.
  EXPECT_EQ(split("kimi-k2", "it's HelloWorld HELLO 12345 \xe4\xbd\xa0\xe5\xa5\xbdworld"),
            (V{"it's", " Hello", "World", " HELLO", " ", "123", "45", " ", "\xe4\xbd\xa0\xe5\xa5\xbd", "world"}));
  EXPECT_EQ(split("kimi-k2", "\xe6\x97\xa5\xe6\x9c\xac\xe3\x83\x86\xe3\x82\xad (x)y\n\n z"),
            (V{"\xe6\x97\xa5\xe6\x9c\xac", "\xe3\x83\x86\xe3\x82\xad", " (", "x", ")y", "\n\n", " z"}));
  EXPECT_EQ(find_gguf_pre_tokenizer("deepseek-llm"), nullptr);
  EXPECT_EQ(gguf_pre_tokenizer_names(), (V{"deepseek-v3", "default", "glm4", "gpt-4o", "gpt2", "kimi-k2", "olmo", "qwen2"}));
}

TEST(BpeTokenizer, MalformedFilesGiveOneFormatErrorNamingTheProblem) {
  const json good = make_json(qwen2_pre_tokenizer());
  const auto with = [&](const std::function<void(json&)>& edit) {
    json j = good;
    edit(j);
    return error_of(j.dump());
  };
  const auto expect_has = [](const std::string& msg, const std::string& part) {
    EXPECT_NE(msg.find(part), std::string::npos) << "message: '" << msg << "' lacks '" << part << "'";
    EXPECT_NE(msg.find("bad/tokenizer.json"), std::string::npos) << msg;
  };
  EXPECT_EQ(error_of(good.dump()), "");
  expect_has(error_of("{\"model\": "), "is not valid JSON");
  expect_has(error_of("[1, 2]"), "expected an object");
  expect_has(with([](json& j) { j.erase("model"); }), "missing required field 'model'");
  expect_has(with([](json& j) { j["model"]["vocab"] = json::array(); }), "model.vocab: expected an object");
  expect_has(with([](json& j) { j["model"]["vocab"]["xyz"] = "290"; }), "expected a token id");
  expect_has(with([](json& j) { j["model"]["vocab"]["xyz"] = -1; }), "expected a token id");
  expect_has(with([](json& j) { j["model"]["vocab"]["xyz"] = 5; }), "id 5 is given to both");
  expect_has(with([](json& j) { j["model"]["vocab"].erase("Ā"); }), "lacks the symbol 'Ā' of byte 0");
  expect_has(with([](json& j) { j["model"]["merges"].push_back("h zz"); }),
             "model.merges[14]: token 'zz' is not in model.vocab");
  expect_has(with([](json& j) { j["model"]["merges"].push_back("x y"); }), "the merged token 'xy' is not in model.vocab");
  expect_has(with([](json& j) { j["model"]["merges"].push_back("h e l"); }), "two tokens separated by one space");
  expect_has(with([](json& j) { j["model"]["merges"].push_back(7); }), "model.merges[14]: expected");
  expect_has(with([](json& j) { j["model"]["merges"] = "h e"; }), "model.merges: expected an array");
  expect_has(with([](json& j) { j["model"]["type"] = "WordPiece"; }), "model type 'WordPiece' is not implemented");
  expect_has(with([](json& j) { j["model"]["byte_fallback"] = true; }), "model.byte_fallback");
  expect_has(with([](json& j) { j["model"]["dropout"] = 0.1; }), "model.dropout");
  expect_has(with([](json& j) { j["model"]["continuing_subword_prefix"] = "##"; }), "model.continuing_subword_prefix");
  expect_has(with([](json& j) { j["model"]["end_of_word_suffix"] = "</w>"; }), "model.end_of_word_suffix");
  expect_has(with([](json& j) { j["model"]["frobnicate"] = 1; }), "unknown field 'frobnicate'");
  expect_has(with([](json& j) { j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(ab"; }),
             "pre_tokenizer.pretokenizers[0].pattern.Regex: PCRE2 cannot compile the regex");
  expect_has(with([](json& j) { j["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Sideways"; }),
             "split behavior 'Sideways'");
  expect_has(with([](json& j) { j["pre_tokenizer"]["pretokenizers"][0]["type"] = "Whitespace"; }),
             "pre-tokenizer type 'Whitespace' is not implemented");
  expect_has(with([](json& j) { j["pre_tokenizer"] = nullptr; }), "pre_tokenizer: is null");
  expect_has(with([](json& j) { j["pre_tokenizer"] = j["pre_tokenizer"]["pretokenizers"][0]; }), "has no ByteLevel step");
  expect_has(with([](json& j) {
               auto& list = j["pre_tokenizer"]["pretokenizers"];
               std::swap(list[0], list[1]);
             }),
             "Split after ByteLevel");
  expect_has(with([](json& j) { j["normalizer"] = {{"type", "NFKC"}}; }), "normalizer 'NFKC' is not implemented");
  expect_has(with([](json& j) { j["decoder"] = nullptr; }), "decoder: is null");
  expect_has(with([](json& j) { j["decoder"] = {{"type", "WordPiece"}}; }), "decoder 'WordPiece' is not implemented");
  expect_has(with([](json& j) { j["post_processor"] = {{"type", "RobertaProcessing"}}; }),
             "post-processor 'RobertaProcessing' is not implemented");
  expect_has(with([](json& j) {
               j["post_processor"] = {{"type", "TemplateProcessing"},
                                      {"single", {{{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                                                  {{"SpecialToken", {{"id", "<|endoftext|>"}, {"type_id", 0}}}}}},
                                      {"special_tokens", json::object()}};
             }),
             "appends '<|endoftext|>' after the sequence");
  expect_has(with([](json& j) { j["truncation"] = {{"max_length", 8}}; }), "truncation: is set");
  expect_has(with([](json& j) { j["added_tokens"][1]["id"] = 300; }), "added_tokens[1]: id 300 is also added_tokens[0]'s");
  expect_has(with([](json& j) { j["added_tokens"][1]["content"] = ""; }), "added_tokens[1].content: is empty");
  expect_has(with([](json& j) { j["added_tokens"][1]["id"] = 97; }), "id 97 is 'a' in model.vocab");
  expect_has(with([](json& j) { j["added_tokens"][0].erase("content"); }), "missing required field 'content'");
  expect_has(with([](json& j) { j["added_tokens"][0]["special"] = "yes"; }), "added_tokens[0].special: expected true or false");
}

TEST(BpeTokenizer, AddedTokenSingleWordAndRstrip) {
  json j = make_json(qwen2_pre_tokenizer());
  j["added_tokens"][2]["single_word"] = true;  // <|end
  j["added_tokens"][2]["rstrip"] = true;
  auto t = parse(j);
  // Touching a word character on the left ("x") or right ("y"): not a match, plain text.
  // ("x" | "<|" | "end" under the Qwen2 regex).
  EXPECT_EQ(t->encode("x<|end"), (Ids{120, 60, 124, 101, 110, 100}));
  EXPECT_EQ(t->encode("<|endy"), (Ids{60, 124, 101, 110, 100, 121}));
  EXPECT_EQ(t->encode("<|end"), (Ids{302}));
  // Between spaces it matches, and rstrip swallows the spaces after it.
  EXPECT_EQ(t->encode("a <|end  b"), (Ids{97, 32, 302, 98}));
}

TEST(BpeTokenizer, PathologicalRegexFailsInsteadOfHanging) {
  json j = make_json(qwen2_pre_tokenizer());
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = R"((a|aa)+$)";
  for (bool jit : {true, false}) {
    BpeTokenizerOptions o;
    o.regex.jit = jit;
    o.regex.match_limit = 100000;
    auto t = parse(j, o);
    EXPECT_THROW(t->encode(std::string(64, 'a') + "b"), FormatError) << "jit " << jit;
    EXPECT_EQ(t->encode("aa"), (Ids{97, 97}));
  }
}

void write(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

class ScratchDir {
 public:
  ScratchDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "ferry_tok_XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string operator/(const std::string& name) const { return (std::filesystem::path(path_) / name).string(); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(LoadTokenizer, ReadsTokenizerJsonWhenItIsTheOnlyTokenizerFile) {
  ScratchDir dir;
  try {
    load_tokenizer(dir.path(), "", 303);
    FAIL() << "an empty directory gave a tokenizer";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer.json"), std::string::npos) << e.what();
  }
  write(dir / "tokenizer.json", make_json(qwen2_pre_tokenizer()).dump());
  auto t = load_tokenizer(dir.path(), "", 303);
  EXPECT_EQ(t->name(), "bpe");
  EXPECT_EQ(t->vocab_size(), 303);
  EXPECT_EQ(t->encode("the hello"), (Ids{116, 261, 32, 260}));
  EXPECT_EQ(load_tokenizer(dir.path(), "byte", 303)->name(), "byte");  // the config's choice wins

  write(dir / "tokenizer.json", "{\"model\": 1");
  try {
    load_tokenizer(dir.path(), "", 303);
    FAIL() << "a broken tokenizer.json loaded";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find(dir / "tokenizer.json"), std::string::npos) << e.what();
  }
}

// A SentencePiece-style vocabulary small enough to work its encodings out by hand.
TokenizerVocab hand_spm_vocabulary() {
  TokenizerVocab v;
  v.kind = TokenizerVocab::Kind::kSentencePiece;
  const std::vector<std::tuple<std::string, float, TokenType>> pieces = {
      {"<unk>", 0, TokenType::kUnknown},        {"<s>", 0, TokenType::kControl},
      {"</s>", 0, TokenType::kControl},         {"<0xC3>", 0, TokenType::kByte},
      {"<0xA9>", 0, TokenType::kByte},          {"\xE2\x96\x81", -1, TokenType::kNormal},
      {"a", -2, TokenType::kNormal},            {"b", -3, TokenType::kNormal},
      {"\xE2\x96\x81" "a", -0.5f, TokenType::kNormal}, {"ab", -1.5f, TokenType::kNormal},
      {"\xE2\x96\x81" "ab", -0.2f, TokenType::kNormal}};
  for (const auto& [piece, score, type] : pieces) {
    v.tokens.push_back(piece);
    v.scores.push_back(score);
    v.types.push_back(type);
  }
  v.bos_id = 1;
  v.eos_id = 2;
  v.unk_id = 0;
  return v;
}

// llama.cpp's SPM merging worked out by hand ("_" for U+2581): the best-scoring adjacent pair
// first, merged pieces re-paired with their neighbours, leftmost on ties; byte fallback; the
// unknown piece; control pieces found in the text, with the space prefix after them.
TEST(SpmTokenizer, MergesWorkedOutByHand) {
  const auto tok = make_spm_tokenizer(hand_spm_vocabulary(), {.add_space_prefix = true, .bos_id = 1}, "hand");
  using Ids = std::vector<std::int32_t>;
  EXPECT_EQ(tok->encode("ab"), (Ids{10}));       // _ a b -> _a b (-0.5) -> _ab (-0.2)
  EXPECT_EQ(tok->encode("abab"), (Ids{10, 9}));  // _a, _ab, then the second ab
  EXPECT_EQ(tok->encode("bab"), (Ids{5, 7, 9}));  // _b and ba are no pieces
  EXPECT_EQ(tok->encode("\xC3\xA9"), (Ids{5, 3, 4}));  // e-acute: its two byte pieces
  EXPECT_EQ(tok->encode("c"), (Ids{5, 0}));             // no byte piece for 'c': unknown
  EXPECT_EQ(tok->encode("a</s>b"), (Ids{8, 2, 5, 7}));
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->decode({10, 9}), "abab");
  EXPECT_EQ(tok->decode({5, 3, 4}), "\xC3\xA9");  // the first piece's prefix space removed
  EXPECT_EQ(tok->decode({8, 2, 5, 7}), "a</s> b");
  const auto no_prefix = make_spm_tokenizer(hand_spm_vocabulary(), {.add_space_prefix = false}, "hand");
  EXPECT_EQ(no_prefix->encode("ab"), (Ids{9}));
  EXPECT_EQ(no_prefix->decode({5, 6}), " a");
  EXPECT_EQ(no_prefix->bos_id(), -1);
}

TEST(SpmTokenizer, MalformedVocabularyIsAFormatError) {
  TokenizerVocab v = hand_spm_vocabulary();
  v.scores.pop_back();
  EXPECT_THROW(make_spm_tokenizer(v, {}, "f.gguf"), FormatError);
  v = hand_spm_vocabulary();
  v.tokens[3] = "<0xZZ>";
  try {
    make_spm_tokenizer(v, {}, "f.gguf");
    ADD_FAILURE() << "a bad byte piece was accepted";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("<0xZZ>"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ferry::moe
