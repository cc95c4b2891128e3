#include "moe/tokenizer/bpe_model.h"

#include <algorithm>
#include <queue>

#include "moe/tokenizer/byte_level.h"

namespace ferry::moe {

namespace {

// A field that HF reads but ferry does not implement: accepted only at its inactive value.
void refuse_if_set(const nlohmann::json& model, const char* key, const JsonPlace& at) {
  const nlohmann::json* v = json_find(model, key);
  if (!v || v->is_null()) return;
  const bool inactive = (v->is_boolean() && !v->get<bool>()) || (v->is_string() && v->get<std::string>().empty()) ||
                        (v->is_number() && v->get<double>() == 0.0);
  if (!inactive) at.child(key).fail("= ", json_excerpt(*v), " is not implemented (ferry refuses it rather than ignore it)");
}

}  // namespace

BpeModel::BpeModel(const nlohmann::json& model, const JsonPlace& at) {
  const std::string type = json_type(model, at);
  if (type != "BPE") at.child("type").fail("model type '", type, "' is not implemented (ferry reads BPE)");
  json_known_fields(model, {"type", "dropout", "unk_token", "continuing_subword_prefix", "end_of_word_suffix",
                            "fuse_unk", "byte_fallback", "ignore_merges", "vocab", "merges"}, at);
  for (const char* key : {"dropout", "byte_fallback", "continuing_subword_prefix", "end_of_word_suffix"})
    refuse_if_set(model, key, at);
  if (const nlohmann::json* unk = json_find(model, "unk_token"); unk && !unk->is_null())
    json_string(*unk, at.child("unk_token"));
  json_bool_or(model, "fuse_unk", false, at);
  ignore_merges_ = json_bool_or(model, "ignore_merges", false, at);

  const JsonPlace vocab_at = at.child("vocab");
  const nlohmann::json& vocab = json_object(json_required(model, "vocab", at), vocab_at);
  vocab_.reserve(vocab.size());
  tokens_.reserve(vocab.size());
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    const std::int32_t id = json_token_id(it.value(), vocab_at.child("'" + it.key() + "'"));
    auto [pos, fresh] = tokens_.emplace(id, it.key());
    if (!fresh) vocab_at.fail("id ", id, " is given to both '", pos->second, "' and '", it.key(), "'");
    vocab_.emplace(it.key(), id);
    max_id_ = std::max(max_id_, id);
  }
  for (int b = 0; b < 256; ++b) {
    const char byte = static_cast<char>(b);
    const std::string sym = byte_level_encode(std::string_view(&byte, 1));
    const std::int32_t bid = id(sym);
    if (bid < 0)
      vocab_at.fail("lacks the symbol '", sym, "' of byte ", b,
                    ": a byte-level vocabulary must hold all 256 byte symbols");
    byte_ids_[b] = bid;
  }

  const JsonPlace merges_at = at.child("merges");
  const nlohmann::json& merges = json_required(model, "merges", at);
  if (!merges.is_array()) merges_at.fail("expected an array, got ", json_excerpt(merges));
  merges_.reserve(merges.size());
  for (std::size_t r = 0; r < merges.size(); ++r) {
    const nlohmann::json& m = merges[r];
    const JsonPlace m_at = merges_at.index(r);
    std::string a, b;
    if (m.is_string()) {  // tokenizers < 0.20: "a b"
      const std::string s = m.get<std::string>();
      merge_list_.push_back(s);
      const std::size_t sp = s.find(' ');
      if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
        m_at.fail("expected two tokens separated by one space, got ", json_excerpt(m));
      a = s.substr(0, sp);
      b = s.substr(sp + 1);
    } else if (m.is_array() && m.size() == 2) {  // tokenizers >= 0.20: ["a", "b"]
      a = json_string(m[0], m_at.index(0));
      b = json_string(m[1], m_at.index(1));
      auto escape_spaces = [](const std::string& t) {
        std::string out;
        for (char c : t) out += c == ' ' ? std::string("\xC4\xA0") : std::string(1, c);  // U+0120
        return out;
      };
      merge_list_.push_back(escape_spaces(a) + " " + escape_spaces(b));
    } else {
      m_at.fail("expected \"a b\" or [\"a\", \"b\"], got ", json_excerpt(m));
    }
    const std::int32_t ia = id(a), ib = id(b), merged = id(a + b);
    if (ia < 0) m_at.fail("token '", a, "' is not in model.vocab");
    if (ib < 0) m_at.fail("token '", b, "' is not in model.vocab");
    if (merged < 0) m_at.fail("the merged token '", a + b, "' is not in model.vocab");
    merges_[pair_key(ia, ib)] = {static_cast<std::uint32_t>(r), merged};
  }
}

const std::string* BpeModel::token(std::int32_t id) const {
  auto it = tokens_.find(id);
  return it == tokens_.end() ? nullptr : &it->second;
}

std::int32_t BpeModel::id(const std::string& token) const {
  auto it = vocab_.find(token);
  return it == vocab_.end() ? -1 : it->second;
}

void BpeModel::encode(std::string_view bytes, std::vector<std::int32_t>& out) const {
  if (bytes.empty()) return;
  if (ignore_merges_) {
    if (const std::int32_t whole = id(byte_level_encode(bytes)); whole >= 0) {
      out.push_back(whole);
      return;
    }
  }
  const int n = static_cast<int>(bytes.size());
  struct Symbol {
    std::int32_t id;
    int prev, next;  // neighbours in the current word, -1 at the ends
    bool alive;
  };
  std::vector<Symbol> sym(n);
  for (int i = 0; i < n; ++i) sym[i] = {byte_ids_[static_cast<unsigned char>(bytes[i])], i - 1, i + 1 < n ? i + 1 : -1, true};

  struct Candidate {
    std::uint32_t rank;
    int pos;  // the left symbol
    std::int32_t merged;
  };
  const auto later = [](const Candidate& x, const Candidate& y) {
    return x.rank != y.rank ? x.rank > y.rank : x.pos > y.pos;
  };
  std::priority_queue<Candidate, std::vector<Candidate>, decltype(later)> queue(later);
  const auto consider = [&](int left) {
    const int right = sym[left].next;
    if (right < 0) return;
    auto it = merges_.find(pair_key(sym[left].id, sym[right].id));
    if (it != merges_.end()) queue.push({it->second.first, left, it->second.second});
  };
  for (int i = 0; i + 1 < n; ++i) consider(i);
  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    Symbol& left = sym[c.pos];
    if (!left.alive || left.next < 0) continue;
    Symbol& right = sym[left.next];
    auto it = merges_.find(pair_key(left.id, right.id));
    if (it == merges_.end() || it->second.second != c.merged) continue;  // the pair changed since queued
    left.id = c.merged;
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0) sym[right.next].prev = c.pos;
    if (left.prev >= 0) consider(left.prev);
    consider(c.pos);
  }
  for (int i = 0; i >= 0; i = sym[i].next) out.push_back(sym[i].id);
}

}  // namespace ferry::moe
