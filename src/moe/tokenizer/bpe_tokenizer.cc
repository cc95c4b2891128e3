#include "core/json_depth.h"
#include "moe/tokenizer/bpe_tokenizer.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/excerpt.h"
#include "core/path_checks.h"
#include "moe/tokenizer/added_tokens.h"
#include "moe/tokenizer/bpe_model.h"
#include "moe/tokenizer/byte_level.h"
#include "moe/tokenizer/json_fields.h"
#include "moe/tokenizer/nfc.h"
#include "moe/tokenizer/pre_tokenizer.h"
#include "moe/tokenizer/utf8.h"

namespace ferry::moe {

namespace {

using nlohmann::json;

// The parts of a tokenizer.json, parsed and checked; BpeTokenizer only runs them.
struct Parts {
  std::unique_ptr<BpeModel> model;
  std::unique_ptr<PreTokenizer> pre_tokenizer;
  bool nfc = false;
  std::vector<AddedToken> added;
  std::int32_t bos_id = -1;
  int vocab_size = 0;
};

class BpeTokenizer : public Tokenizer {
 public:
  explicit BpeTokenizer(Parts p)
      : model_(std::move(p.model)), pre_tokenizer_(std::move(p.pre_tokenizer)), nfc_(p.nfc), bos_id_(p.bos_id),
        vocab_size_(p.vocab_size) {
    std::vector<AddedToken> raw, normalized;
    for (const AddedToken& t : p.added) {
      added_content_.emplace(t.id, t.content);
      added_.emplace(t.id, t);
      (t.normalized ? normalized : raw).push_back(t);
    }
    raw_ = AddedTokenMatcher(std::move(raw));
    normalized_ = AddedTokenMatcher(std::move(normalized));
  }

  std::vector<std::int32_t> encode(const std::string& text) const override {
    std::vector<std::int32_t> ids;
    std::vector<std::string> pieces;
    for (const AddedTokenSegment& seg : raw_.split(text)) {
      if (seg.id >= 0) {
        ids.push_back(seg.id);
        continue;
      }
      const std::string_view plain(text.data() + seg.begin, seg.end - seg.begin);
      const std::string normalized = nfc_ ? nfc_normalize(plain) : std::string(plain);
      for (const AddedTokenSegment& s : normalized_.split(normalized)) {
        if (s.id >= 0) {
          ids.push_back(s.id);
          continue;
        }
        const std::string_view rest(normalized.data() + s.begin, s.end - s.begin);
        for (const Utf8Run& run : utf8_runs(rest)) {
          const std::string_view r = rest.substr(run.begin, run.end - run.begin);
          if (!run.valid) {  // the regexes need valid UTF-8: invalid bytes are a pre-token of their own
            model_->encode(r, ids);
            continue;
          }
          pieces.clear();
          pre_tokenizer_->split(r, pieces);
          for (const std::string& p : pieces) model_->encode(p, ids);
        }
      }
    }
    return ids;
  }

  std::string decode(const std::vector<std::int32_t>& ids) const override {
    std::string out;
    for (std::int32_t id : ids) {
      if (auto it = added_content_.find(id); it != added_content_.end()) {
        out += it->second;
      } else if (const std::string* token = model_->token(id)) {
        if (!byte_level_decode(*token, out)) out += *token;
      }
    }
    return out;
  }

  int vocab_size() const override { return vocab_size_; }
  int bos_id() const override { return bos_id_; }
  std::string name() const override { return "bpe"; }

  // As llama.cpp's converter lists a tokenizer.json vocabulary (convert_hf_to_gguf.py,
  // get_vocab_base): model.vocab entries kNormal; added tokens kControl when special or when they
  // look special (does_token_look_special: <|...|>, <｜...｜>, <pad>, <mask>, <2mass>, [@BOS@],
  // <unused...>), else kUserDefined with U+2581 written as a space; gaps "[PAD<id>]" kUnused.
  TokenizerVocab vocabulary() const override {
    TokenizerVocab v;
    v.kind = TokenizerVocab::Kind::kByteLevelBpe;
    v.bos_id = bos_id_;
    v.merges = model_->merge_list();
    for (std::int32_t id = 0; id < vocab_size_; ++id) {
      if (auto it = added_.find(id); it != added_.end()) {
        const AddedToken& t = it->second;
        if (t.special || looks_special(t.content)) {
          v.tokens.push_back(t.content);
          v.types.push_back(TokenType::kControl);
        } else {
          std::string s;
          for (std::size_t k = 0; k < t.content.size(); ++k) {
            if (t.content.compare(k, 3, "\xE2\x96\x81") == 0) {
              s += ' ';
              k += 2;
            } else {
              s += t.content[k];
            }
          }
          v.tokens.push_back(s);
          v.types.push_back(TokenType::kUserDefined);
        }
      } else if (const std::string* token = model_->token(id)) {
        v.tokens.push_back(*token);
        v.types.push_back(TokenType::kNormal);
      } else {
        v.tokens.push_back("[PAD" + std::to_string(id) + "]");
        v.types.push_back(TokenType::kUnused);
      }
    }
    return v;
  }

 private:
  std::unique_ptr<BpeModel> model_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  bool nfc_;
  std::int32_t bos_id_;
  int vocab_size_;
  AddedTokenMatcher raw_, normalized_;
  std::unordered_map<std::int32_t, std::string> added_content_;
  std::unordered_map<std::int32_t, AddedToken> added_;

  static bool looks_special(const std::string& s) {
    auto starts = [&](const char* p) { return s.rfind(p, 0) == 0; };
    auto ends = [&](const char* p) {
      const std::string t(p);
      return s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
    };
    return s == "<pad>" || s == "<mask>" || s == "<2mass>" || s == "[@BOS@]" || (starts("<|") && ends("|>")) ||
           (starts("<\xEF\xBD\x9C") && ends("\xEF\xBD\x9C>")) || (starts("<unused") && ends(">"));
  }
};

bool parse_normalizer(const json& j, const JsonPlace& at) {
  if (j.is_null()) return false;
  const std::string type = json_type(j, at);
  if (type == "NFC") {
    json_known_fields(j, {"type"}, at);
    return true;
  }
  if (type == "Sequence") {  // a sequence of NFCs is NFC (NFC is idempotent); an empty one is none
    json_known_fields(j, {"type", "normalizers"}, at);
    const JsonPlace list_at = at.child("normalizers");
    const json& list = json_required(j, "normalizers", at);
    if (!list.is_array()) list_at.fail("expected an array, got ", json_excerpt(list));
    bool nfc = false;
    for (std::size_t i = 0; i < list.size(); ++i) nfc = parse_normalizer(list[i], list_at.index(i)) || nfc;
    return nfc;
  }
  at.child("type").fail("normalizer '", type, "' is not implemented (ferry implements NFC)");
}

std::vector<AddedToken> parse_added_tokens(const json* j, const JsonPlace& at, bool nfc) {
  std::vector<AddedToken> out;
  if (!j || j->is_null()) return out;
  if (!j->is_array()) at.fail("expected an array, got ", json_excerpt(*j));
  std::unordered_map<std::int32_t, std::size_t> by_id;
  std::unordered_map<std::string, std::size_t> by_content;
  for (std::size_t i = 0; i < j->size(); ++i) {
    const JsonPlace t_at = at.index(i);
    const json& o = json_object((*j)[i], t_at);
    json_known_fields(o, {"id", "content", "single_word", "lstrip", "rstrip", "normalized", "special"}, t_at);
    AddedToken t;
    t.id = json_token_id(json_required(o, "id", t_at), t_at.child("id"));
    t.content = json_string(json_required(o, "content", t_at), t_at.child("content"));
    if (t.content.empty()) t_at.child("content").fail("is empty");
    t.special = json_bool_or(o, "special", false, t_at);
    t.single_word = json_bool_or(o, "single_word", false, t_at);
    t.lstrip = json_bool_or(o, "lstrip", false, t_at);
    t.rstrip = json_bool_or(o, "rstrip", false, t_at);
    t.normalized = json_bool_or(o, "normalized", !t.special, t_at);
    // HF matches a normalized token in normalized text, so it normalizes the token too.
    if (t.normalized && nfc) t.content = nfc_normalize(t.content);
    if (auto [it, fresh] = by_id.emplace(t.id, i); !fresh) t_at.fail("id ", t.id, " is also added_tokens[", it->second, "]'s");
    if (auto [it, fresh] = by_content.emplace(t.content, i); !fresh)
      t_at.fail("content '", t.content, "' is also added_tokens[", it->second, "]'s");
    out.push_back(std::move(t));
  }
  return out;
}

// The BOS of a TemplateProcessing: the special token before $A in `single`, or -1.
std::int32_t parse_template(const json& j, const JsonPlace& at) {
  json_known_fields(j, {"type", "single", "pair", "special_tokens"}, at);
  // `pair` is the template of two-sequence inputs, which ferry never encodes.
  const JsonPlace single_at = at.child("single");
  const json& single = json_required(j, "single", at);
  if (!single.is_array()) single_at.fail("expected an array, got ", json_excerpt(single));
  std::vector<std::string> before, after;
  bool seen_sequence = false;
  for (std::size_t i = 0; i < single.size(); ++i) {
    const JsonPlace item_at = single_at.index(i);
    const json& item = json_object(single[i], item_at);
    if (item.size() != 1) item_at.fail("expected {\"SpecialToken\": ...} or {\"Sequence\": ...}");
    const std::string kind = item.begin().key();
    const JsonPlace body_at = item_at.child(kind);
    const json& body = json_object(item.begin().value(), body_at);
    const std::string name = json_string(json_required(body, "id", body_at), body_at.child("id"));
    if (kind == "Sequence") {
      if (name != "A" || seen_sequence) body_at.fail("the single template must hold the sequence A once, got '", name, "'");
      seen_sequence = true;
    } else if (kind == "SpecialToken") {
      (seen_sequence ? after : before).push_back(name);
    } else {
      item_at.fail("template piece '", kind, "' is not SpecialToken or Sequence");
    }
  }
  if (!seen_sequence) single_at.fail("has no Sequence A");
  if (!after.empty())
    single_at.fail("appends '", after[0], "' after the sequence: not implemented (ferry only prepends a BOS)");
  if (before.empty()) return -1;
  if (before.size() > 1) single_at.fail("prepends ", before.size(), " special tokens: not implemented (ferry prepends one BOS)");
  const JsonPlace specials_at = at.child("special_tokens");
  const json& specials = json_object(json_required(j, "special_tokens", at), specials_at);
  const json* entry = json_find(specials, before[0]);
  if (!entry) specials_at.fail("has no entry for the template's '", before[0], "'");
  const JsonPlace entry_at = specials_at.child(before[0]);
  const json& ids = json_required(json_object(*entry, entry_at), "ids", entry_at);
  if (!ids.is_array() || ids.size() != 1)
    entry_at.child("ids").fail("expected one id (ferry prepends one BOS), got ", json_excerpt(ids));
  return json_token_id(ids[0], entry_at.child("ids").index(0));
}

std::int32_t parse_post_processor(const json& j, const JsonPlace& at) {
  if (j.is_null()) return -1;
  const std::string type = json_type(j, at);
  if (type == "ByteLevel") {  // it only trims offsets
    json_known_fields(j, {"type", "add_prefix_space", "trim_offsets", "use_regex"}, at);
    return -1;
  }
  if (type == "TemplateProcessing") return parse_template(j, at);
  if (type == "Sequence") {
    json_known_fields(j, {"type", "processors"}, at);
    const JsonPlace list_at = at.child("processors");
    const json& list = json_required(j, "processors", at);
    if (!list.is_array()) list_at.fail("expected an array, got ", json_excerpt(list));
    std::int32_t bos = -1;
    int templates = 0;
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string t = json_type(list[i], list_at.index(i));
      if (t == "TemplateProcessing" && ++templates > 1)
        list_at.index(i).fail("a second TemplateProcessing is not implemented");
      const std::int32_t b = parse_post_processor(list[i], list_at.index(i));
      if (b >= 0) bos = b;
    }
    return bos;
  }
  at.child("type").fail("post-processor '", type,
                        "' is not implemented (ferry implements ByteLevel, TemplateProcessing, Sequence)");
}

void parse_decoder(const json* j, const JsonPlace& at) {
  if (!j || j->is_null()) at.fail("is null: Hugging Face would join the tokens with spaces; ferry implements the ByteLevel decoder");
  const std::string type = json_type(*j, at);
  if (type != "ByteLevel") at.child("type").fail("decoder '", type, "' is not implemented (ferry implements ByteLevel)");
  json_known_fields(*j, {"type", "add_prefix_space", "trim_offsets", "use_regex"}, at);
}

// A tokenizer.json holding bytes that are not UTF-8: the JSON library's message says only "ill-formed
// UTF-8 byte" at a column. The text with each such byte B replaced by the private-use code point
// U+10FF00 + B (which the file does not hold) parses; the vocabulary entry, added token or merge
// that holds one is the one named, its bytes shown as \xNN.
[[noreturn]] void refuse_invalid_utf8(std::string_view text, std::size_t bad_at, const std::string& origin) {
  constexpr char32_t kMark = 0x10FF00;
  const auto marked_at = [](std::string_view s, std::size_t i) {  // the byte a marker at s[i] stands for, or -1
    if (i + 4 > s.size() || s[i] != '\xF4' || s[i + 1] != '\x8F') return -1;
    const std::size_t n = utf8_sequence_length(s, i);
    return n == 4 && utf8_decode_at(s, i, 4) >= kMark ? static_cast<int>(utf8_decode_at(s, i, 4) - kMark) : -1;
  };
  const std::string where = "tokenizer '" + origin + "': byte " + std::to_string(bad_at) + " is not valid UTF-8";
  for (std::size_t i = 0; i < text.size(); ++i)
    if (marked_at(text, i) >= 0) FERRY_THROW(FormatError, where);
  std::string fixed;
  fixed.reserve(text.size() + 16);
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = utf8_sequence_length(text, i);
    if (n) {
      fixed.append(text.substr(i, n));
      i += n;
    } else {
      utf8_append(fixed, kMark + static_cast<unsigned char>(text[i++]));
    }
  }
  const json root = json::parse(fixed, nullptr, /*allow_exceptions=*/false);
  const auto marked = [&](const std::string& s) {
    for (std::size_t i = 0; i < s.size(); ++i)
      if (marked_at(s, i) >= 0) return true;
    return false;
  };
  const auto shown = [&](const std::string& s) {  // the original bytes, invalid ones as \xNN
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
      const int b = marked_at(s, i);
      if (b < 0) {
        out += s[i];
        continue;
      }
      out += static_cast<char>(b);
      i += 3;
    }
    return excerpt(out);
  };
  if (root.is_object()) {
    const json* model = json_find(root, "model");
    const json* vocab = model && model->is_object() ? json_find(*model, "vocab") : nullptr;
    if (vocab && vocab->is_object())
      for (auto it = vocab->begin(); it != vocab->end(); ++it)
        if (marked(it.key()))
          FERRY_THROW(FormatError, where, ": model.vocab token ", excerpt(it.value().dump()), " '", shown(it.key()),
                      "' (tokens must be UTF-8 text)");
    const json* added = json_find(root, "added_tokens");
    if (added && added->is_array())
      for (std::size_t i = 0; i < added->size(); ++i) {
        const json& t = (*added)[i];
        const json* content = t.is_object() ? json_find(t, "content") : nullptr;
        if (content && content->is_string() && marked(content->get<std::string>()))
          FERRY_THROW(FormatError, where, ": added_tokens[", i, "] '", shown(content->get<std::string>()),
                      "' (tokens must be UTF-8 text)");
      }
    const json* merges = model && model->is_object() ? json_find(*model, "merges") : nullptr;
    if (merges && merges->is_array())
      for (std::size_t i = 0; i < merges->size(); ++i)
        if (marked((*merges)[i].dump()))
          FERRY_THROW(FormatError, where, ": model.merges[", i, "] (merges must be UTF-8 text)");
  }
  FERRY_THROW(FormatError, where);
}

}  // namespace

std::unique_ptr<Tokenizer> parse_bpe_tokenizer_json(std::string_view text, const std::string& origin,
                                                    const BpeTokenizerOptions& options) {
  require_json_depth(text, kMaxJsonDepthFile, "tokenizer '" + origin + "'");
  if (const std::size_t bad = utf8_invalid_at(text); bad < text.size()) refuse_invalid_utf8(text, bad, origin);
  json root;
  try {
    root = json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    FERRY_THROW(FormatError, "tokenizer '", origin, "' is not valid JSON: ", e.what());
  }
  const JsonPlace top{origin, ""};
  json_object(root, top);
  json_known_fields(root, {"version", "truncation", "padding", "added_tokens", "normalizer", "pre_tokenizer", "model",
                           "post_processor", "decoder"}, top);
  for (const char* key : {"truncation", "padding"})
    if (const json* v = json_find(root, key); v && !v->is_null())
      top.child(key).fail("is set: not implemented (ferry encodes whole texts, one at a time)");

  Parts p;
  p.model = std::make_unique<BpeModel>(json_required(root, "model", top), top.child("model"));
  const json* normalizer = json_find(root, "normalizer");
  p.nfc = normalizer && parse_normalizer(*normalizer, top.child("normalizer"));
  p.pre_tokenizer = std::make_unique<PreTokenizer>(json_required(root, "pre_tokenizer", top), top.child("pre_tokenizer"),
                                                   options.regex);
  p.added = parse_added_tokens(json_find(root, "added_tokens"), top.child("added_tokens"), p.nfc);
  std::int32_t max_id = p.model->max_id();
  for (std::size_t i = 0; i < p.added.size(); ++i) {
    const AddedToken& t = p.added[i];
    const std::string* entry = p.model->token(t.id);
    // GPT-2 lists <|endoftext|> in both; the same id for another string would make decode ambiguous.
    if (entry && *entry != t.content)
      top.child("added_tokens").index(i).fail("id ", t.id, " is '", *entry, "' in model.vocab but the token's content is '",
                                              t.content, "'");
    max_id = std::max(max_id, t.id);
  }
  p.vocab_size = max_id + 1;
  if (const json* post = json_find(root, "post_processor")) p.bos_id = parse_post_processor(*post, top.child("post_processor"));
  if (p.bos_id >= 0) {
    const bool known = p.model->token(p.bos_id) ||
                       std::any_of(p.added.begin(), p.added.end(), [&](const AddedToken& t) { return t.id == p.bos_id; });
    if (!known) top.child("post_processor").fail("BOS id ", p.bos_id, " is neither in model.vocab nor in added_tokens");
  }
  parse_decoder(json_find(root, "decoder"), top.child("decoder"));
  return std::make_unique<BpeTokenizer>(std::move(p));
}

std::unique_ptr<Tokenizer> load_bpe_tokenizer_json(const std::string& path, const BpeTokenizerOptions& options) {
  require_regular_file(path, "tokenizer");
  std::ifstream in(path, std::ios::binary);
  if (!in) FERRY_THROW(IoError, "cannot open tokenizer '", path, "'");
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) FERRY_THROW(IoError, "cannot read tokenizer '", path, "'");
  return parse_bpe_tokenizer_json(s.str(), path, options);
}

}  // namespace ferry::moe
