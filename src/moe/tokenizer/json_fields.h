// Typed reads of JSON fields for the tokenizer.json reader: a missing field or one of the wrong
// type is one FormatError naming the file and the field's path (`model.vocab`,
// `pre_tokenizer.pretokenizers[1].behavior`) instead of a JSON library exception.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace ferry::moe {

// Where a JSON value came from: the file, and the path of the value inside it.
struct JsonPlace {
  std::string file;
  std::string path;

  JsonPlace child(const std::string& key) const { return {file, path.empty() ? key : path + "." + key}; }
  JsonPlace index(std::size_t i) const { return {file, path + "[" + std::to_string(i) + "]"}; }
  // Throws FormatError "tokenizer 'FILE': PATH: WHAT".
  template <typename... Args>
  [[noreturn]] void fail(const Args&... what) const {
    FERRY_THROW(FormatError, "tokenizer '", file, "': ", path.empty() ? "top level" : path, ": ", what...);
  }
};

// A short rendering of a JSON value for error messages: scalars as JSON (long strings cut),
// containers by kind only (dumping them would recurse as deep as the input nests).
inline std::string json_excerpt(const nlohmann::json& j) {
  if (j.is_object()) return "an object";
  if (j.is_array()) return "an array of " + std::to_string(j.size());
  std::string s = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

// Fails naming the first field of `obj` not in `known`: a field ferry does not know may change
// the output, so it is refused rather than ignored.
inline void json_known_fields(const nlohmann::json& obj, std::initializer_list<const char*> known, const JsonPlace& at) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool found = false;
    for (const char* k : known) found = found || it.key() == k;
    if (!found) at.fail("unknown field '", it.key(), "' (ferry does not implement it)");
  }
}

inline const nlohmann::json& json_object(const nlohmann::json& j, const JsonPlace& at) {
  if (!j.is_object()) at.fail("expected an object, got ", json_excerpt(j));
  return j;
}

// The field `key` of object `obj`, or nullptr when absent.
inline const nlohmann::json* json_find(const nlohmann::json& obj, const std::string& key) {
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

inline const nlohmann::json& json_required(const nlohmann::json& obj, const std::string& key, const JsonPlace& at) {
  const nlohmann::json* v = json_find(obj, key);
  if (!v) at.fail("missing required field '", key, "'");
  return *v;
}

inline std::string json_string(const nlohmann::json& j, const JsonPlace& at) {
  if (!j.is_string()) at.fail("expected a string, got ", json_excerpt(j));
  return j.get<std::string>();
}

// obj[key] as a bool; `fallback` when absent or null.
inline bool json_bool_or(const nlohmann::json& obj, const std::string& key, bool fallback, const JsonPlace& at) {
  const nlohmann::json* v = json_find(obj, key);
  if (!v || v->is_null()) return fallback;
  if (!v->is_boolean()) at.child(key).fail("expected true or false, got ", json_excerpt(*v));
  return v->get<bool>();
}

// A token id: an integer in [0, 2^31 - 1).
inline std::int32_t json_token_id(const nlohmann::json& j, const JsonPlace& at) {
  if (j.is_number_unsigned() && j.get<std::uint64_t>() < 0x7fffffffULL) return static_cast<std::int32_t>(j.get<std::uint64_t>());
  if (j.is_number_integer() && j.get<std::int64_t>() >= 0 && j.get<std::int64_t>() < 0x7fffffffLL)
    return static_cast<std::int32_t>(j.get<std::int64_t>());
  at.fail("expected a token id (an integer in [0, 2147483646]), got ", json_excerpt(j));
}

// obj["type"] as a string (the tag of every tokenizer.json component).
inline std::string json_type(const nlohmann::json& obj, const JsonPlace& at) {
  json_object(obj, at);
  return json_string(json_required(obj, "type", at), at.child("type"));
}

}  // namespace ferry::moe
