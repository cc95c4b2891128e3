#include "core/spec.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <sstream>

#include "core/error.h"

namespace ferry {
namespace {

std::string trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string format_double(double v) {
  std::ostringstream out;
  out.precision(9);
  out << v;
  return out.str();
}

// Whether `s` starts with "key=": an identifier (letters, digits, '_', '-') and '='.
bool starts_with_key(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  const std::size_t first = i;
  while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_' || s[i] == '-')) ++i;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return i > first && i < s.size() && s[i] == '=';
}

}  // namespace

std::string Spec::name_of(std::string_view text) { return lower(trim(text.substr(0, text.find(':')))); }

Spec Spec::parse(std::string_view text, std::string_view what, std::string_view positional_key) {
  Spec spec;
  auto colon = text.find(':');
  spec.name = name_of(text);
  FERRY_REQUIRE(!spec.name.empty(), what, " spec '", text,
                "': empty name (expected name or name:key=value,...)");
  if (colon == std::string_view::npos) return spec;
  std::string_view rest = text.substr(colon + 1);
  if (!positional_key.empty() && !starts_with_key(rest)) {
    std::string value = trim(rest);
    FERRY_REQUIRE(!value.empty(), what, " spec '", text, "': nothing after ':'");
    spec.params.emplace_back(std::string(positional_key), std::move(value));
    return spec;
  }
  while (true) {
    auto comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    auto eq = item.find('=');
    FERRY_REQUIRE(eq != std::string_view::npos, what, " spec '", text, "': parameter '",
                  trim(item), "' is not key=value");
    std::string key = lower(trim(item.substr(0, eq)));
    std::string value = trim(item.substr(eq + 1));
    FERRY_REQUIRE(!key.empty(), what, " spec '", text, "': empty key in '", trim(item), "'");
    FERRY_REQUIRE(!value.empty(), what, " spec '", text, "': empty value for key '", key, "'");
    for (const auto& [k, v] : spec.params)
      FERRY_REQUIRE(k != key, what, " spec '", text, "': key '", key, "' given twice");
    spec.params.emplace_back(std::move(key), std::move(value));
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return spec;
}

std::string Spec::str() const {
  std::string out = name;
  for (std::size_t i = 0; i < params.size(); ++i)
    out += (i == 0 ? ":" : ",") + params[i].first + "=" + params[i].second;
  return out;
}

SpecReader::SpecReader(Spec spec, std::string what) : spec_(std::move(spec)), what_(std::move(what)) {}

const std::string* SpecReader::find(const std::string& key) const {
  for (const auto& [k, v] : spec_.params)
    if (k == key) return &v;
  return nullptr;
}

bool SpecReader::has(const std::string& key) const { return find(key) != nullptr; }

void SpecReader::record(const std::string& key, std::string value) {
  for (auto& [k, v] : resolved_)
    if (k == key) {
      v = std::move(value);
      return;
    }
  resolved_.emplace_back(key, std::move(value));
}

double SpecReader::get_double(const std::string& key, double fallback) {
  double v = fallback;
  if (const std::string* s = find(key)) {
    std::size_t used = 0;
    bool ok = true;
    try {
      v = std::stod(*s, &used);
    } catch (const std::exception&) {
      ok = false;
    }
    FERRY_REQUIRE(ok && used == s->size() && std::isfinite(v), what_, " '", spec_.name,
                  "': option ", key, "='", *s, "' is not a finite number");
  }
  record(key, format_double(v));
  return v;
}

std::int64_t SpecReader::get_int(const std::string& key, std::int64_t fallback) {
  std::int64_t v = fallback;
  if (const std::string* s = find(key)) {
    auto [ptr, ec] = std::from_chars(s->data(), s->data() + s->size(), v);
    FERRY_REQUIRE(ec == std::errc() && ptr == s->data() + s->size(), what_, " '", spec_.name,
                  "': option ", key, "='", *s, "' is not an integer");
  }
  record(key, std::to_string(v));
  return v;
}

std::uint64_t SpecReader::get_uint(const std::string& key, std::uint64_t fallback) {
  std::uint64_t v = fallback;
  if (const std::string* s = find(key)) {
    auto [ptr, ec] = std::from_chars(s->data(), s->data() + s->size(), v);
    FERRY_REQUIRE(ec == std::errc() && ptr == s->data() + s->size(), what_, " '", spec_.name,
                  "': option ", key, "='", *s, "' is not a non-negative integer");
  }
  record(key, std::to_string(v));
  return v;
}

bool SpecReader::get_bool(const std::string& key, bool fallback) {
  bool v = fallback;
  if (const std::string* s = find(key)) {
    std::string t = lower(*s);
    if (t == "1" || t == "true" || t == "on" || t == "yes") {
      v = true;
    } else if (t == "0" || t == "false" || t == "off" || t == "no") {
      v = false;
    } else {
      FERRY_THROW(InvalidArgument, what_, " '", spec_.name, "': option ", key, "='", *s,
                  "' is not a boolean (1/0, true/false, on/off, yes/no)");
    }
  }
  record(key, v ? "1" : "0");
  return v;
}

std::string SpecReader::get_string(const std::string& key, const std::string& fallback) {
  const std::string* s = find(key);
  std::string v = s != nullptr ? *s : fallback;
  record(key, v);
  return v;
}

std::string SpecReader::get_choice(const std::string& key, const std::string& fallback,
                                   std::initializer_list<std::string_view> choices) {
  std::string v = fallback;
  if (const std::string* s = find(key)) {
    v = lower(*s);
    if (std::find(choices.begin(), choices.end(), v) == choices.end()) {
      std::string known;
      for (auto c : choices) known += (known.empty() ? "" : ", ") + std::string(c);
      FERRY_THROW(InvalidArgument, what_, " '", spec_.name, "': option ", key, "='", *s,
                  "' is not one of ", known);
    }
  }
  record(key, v);
  return v;
}

void SpecReader::finish() const {
  for (const auto& param : spec_.params) {
    const std::string& k = param.first;  // not a structured binding: clang < 16 cannot capture one
    bool known = std::any_of(resolved_.begin(), resolved_.end(),
                             [&](const auto& r) { return r.first == k; });
    if (known) continue;
    std::string keys;
    for (const auto& r : resolved_) keys += (keys.empty() ? "" : ", ") + r.first;
    FERRY_THROW(InvalidArgument, what_, " '", spec_.name, "': unknown option '", k, "' (known: ",
                keys.empty() ? "none" : keys, ")");
  }
}

std::string SpecReader::canonical() const {
  std::string out = spec_.name;
  bool first = true;
  for (const auto& [k, v] : resolved_) {
    if (v.empty()) continue;
    out += (first ? ":" : ",") + k + "=" + v;
    first = false;
  }
  return out;
}

std::vector<std::string> join_spec_items(const std::vector<std::string>& items) {
  std::vector<std::string> out;
  for (const auto& item : items) {
    if (!out.empty() && starts_with_key(item))
      out.back() += "," + item;
    else
      out.push_back(item);
  }
  return out;
}

}  // namespace ferry
