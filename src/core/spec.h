// Spec strings, the one grammar by which every extension point is chosen and configured:
//   name                      e.g. "twobit", "lru", "ssgd"
//   name:key=value,key=value  e.g. "topk:ratio=0.01,ef=0", "lru:scope=layer"
// Names and keys are case-insensitive (stored lower case), blanks around them are ignored, a key
// appears at most once. A value runs to the next ',' and may itself contain ':' and '=', so one
// spec can name another: "prescope:window=3,predictor=llapor:dir=/models/p" (the inner spec has
// one key at most, since ',' ends the outer value).
//
// A component may name one positional key: then "llapor:/models/p" means "llapor:dir=/models/p"
// (the whole text after ':' is that key's value unless it starts with "key=").
//
// Spec is the parsed text. SpecReader hands typed values to a component's factory, remembers
// which keys were read, so that a key nobody asked for is reported (finish()), and prints the
// canonical spec with every option resolved, defaults included ("topk" -> "topk:ratio=0.01,ef=1").
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ferry {

struct Spec {
  std::string name;                                         // lower case
  std::vector<std::pair<std::string, std::string>> params;  // in spec order, keys unique

  // `what` names the kind of thing in error messages ("codec", "policy"). Throws InvalidArgument
  // on an empty name, a parameter without '=', an empty key or value, or a key given twice.
  // With a `positional_key`, text after ':' that does not start with "key=" is that key's value.
  static Spec parse(std::string_view text, std::string_view what = "spec",
                    std::string_view positional_key = {});
  // The name part of a spec text (lower case, blanks trimmed; "" if there is none).
  static std::string name_of(std::string_view text);
  // "name" or "name:key=value,..." in the order of params.
  std::string str() const;
};

class SpecReader {
 public:
  // `what` names the kind of thing in error messages: "codec 'topk': unknown option ...".
  explicit SpecReader(Spec spec, std::string what = "spec");

  // Typed getters: the value of `key`, or `fallback` if absent. A value that does not parse
  // as the type throws InvalidArgument naming the component, key and value.
  double get_double(const std::string& key, double fallback);
  std::int64_t get_int(const std::string& key, std::int64_t fallback);
  std::uint64_t get_uint(const std::string& key, std::uint64_t fallback);
  bool get_bool(const std::string& key, bool fallback);  // 1/0, true/false, on/off, yes/no
  std::string get_string(const std::string& key, const std::string& fallback);
  // One of `choices` (case-insensitive; returned lower case); anything else is an
  // InvalidArgument listing the choices.
  std::string get_choice(const std::string& key, const std::string& fallback,
                         std::initializer_list<std::string_view> choices);
  bool has(const std::string& key) const;

  // Throws InvalidArgument for the first key that no getter asked for, listing the known keys.
  void finish() const;
  // "name:key=value,..." with every key a getter asked for, in the order they were asked; a key
  // whose value is empty (an optional string that was not given) is left out.
  std::string canonical() const;
  const std::string& name() const { return spec_.name; }
  const std::string& what() const { return what_; }

 private:
  const std::string* find(const std::string& key) const;
  void record(const std::string& key, std::string value);

  Spec spec_;
  std::string what_;
  std::vector<std::pair<std::string, std::string>> resolved_;  // key -> canonical value
};

// A list of specs split on every ',' (as a comma-separated flag is: "lru,prescope:window=2,
// predictor=cooccurrence,ondemand"): an item that starts with "key=" continues the spec before it
// and is joined back to it -> {"lru", "prescope:window=2,predictor=cooccurrence", "ondemand"}.
std::vector<std::string> join_spec_items(const std::vector<std::string>& items);

}  // namespace ferry
