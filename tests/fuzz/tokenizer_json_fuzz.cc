// Fuzzes tokenizer.json reading (moe/model/bpe_tokenizer): the text is either rejected with one
// FormatError, or gives a tokenizer that encodes a fixed text (ASCII, non-ASCII letters,
// digits, newlines, NUL, invalid UTF-8, added-token-like markers) into ids in [0, vocab_size)
// and decodes them; when nothing in the file changes the text by design (a normalizer,
// add_prefix_space, a Removed split, lstrip/rstrip, an added token whose id is a vocabulary
// entry standing for other bytes), the decoded text is the fixed text exactly. Encoding may
// also fail with a FormatError (a regex over its match limit), never otherwise.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz_util.h"
#include "moe/tokenizer/bpe_tokenizer.h"
#include "moe/tokenizer/byte_level.h"

namespace {

using nlohmann::json;

constexpr char kRaw[] =
    "Hello w\xc3\xb6rld, it's 2024!\n\n  x = [1, 22, 333];\t\xe4\xbd\xa0\xe5\xa5\xbd \xf0\x9f\x98\x80 "
    "<|endoftext|><s>\0\xff\xc3(\xed\xa0\x80 end  ";
const std::string kText(kRaw, sizeof kRaw - 1);

// Whether any object in `j`, at any depth, has `key` with a value that satisfies `pred`.
template <typename Pred>
bool any_field(const json& j, const char* key, Pred pred) {
  if (j.is_object()) {
    if (auto v = j.find(key); v != j.end() && pred(*v)) return true;
    for (const auto& [k, v] : j.items())
      if (any_field(v, key, pred)) return true;
  } else if (j.is_array()) {
    for (const auto& v : j)
      if (any_field(v, key, pred)) return true;
  }
  return false;
}

bool has_removed_split(const json& j) {
  return any_field(j, "behavior", [](const json& v) { return v.is_string() && v.get<std::string>() == "Removed"; });
}

bool has_prefix_space(const json& j) {
  return any_field(j, "add_prefix_space", [](const json& v) { return v.is_boolean() && v.get<bool>(); });
}

// Whether the parsed (hence well-formed) file promises decode(encode(s)) == s.
bool round_trip_exact(const json& root) {
  if (auto n = root.find("normalizer"); n != root.end() && !n->is_null()) return false;
  const json& pre = root.at("pre_tokenizer");
  if (has_removed_split(pre) || has_prefix_space(pre)) return false;
  const json& vocab = root.at("model").at("vocab");
  if (auto a = root.find("added_tokens"); a != root.end() && a->is_array()) {
    for (const json& t : *a) {
      for (const char* key : {"lstrip", "rstrip"})
        if (auto f = t.find(key); f != t.end() && f->is_boolean() && f->get<bool>()) return false;
      const std::string content = t.at("content").get<std::string>();
      std::string bytes;
      auto v = vocab.find(content);
      if (v != vocab.end() && *v == t.at("id") && ferry::moe::byte_level_decode(content, bytes) && bytes != content)
        return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ferry;
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::unique_ptr<moe::Tokenizer> tok;
  if (!fuzz::parses<FormatError>([&] { tok = moe::parse_bpe_tokenizer_json(text, "fuzz"); })) return 0;
  FERRY_FUZZ_ASSERT(tok->vocab_size() >= 256);
  FERRY_FUZZ_ASSERT(tok->bos_id() >= -1 && tok->bos_id() < tok->vocab_size());
  std::vector<std::int32_t> ids;
  if (!fuzz::parses<FormatError>([&] { ids = tok->encode(kText); })) return 0;
  for (auto id : ids) FERRY_FUZZ_ASSERT(id >= 0 && id < tok->vocab_size());
  const std::string back = tok->decode(ids);
  if (round_trip_exact(json::parse(text))) FERRY_FUZZ_ASSERT(back == kText);
  return 0;
}
