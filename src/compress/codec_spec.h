// Codec spec strings: "name" or "name:key=value,key=value" (e.g. "topk:ratio=0.01,ef=0").
// CodecSpec is the parsed text; SpecReader hands typed values to a codec's factory, remembers
// which keys were read (so unknown keys are reported) and builds the canonical spec string
// with every option resolved, defaults included.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ferry::compress {

struct CodecSpec {
  std::string name;                                         // lower-case codec name
  std::vector<std::pair<std::string, std::string>> params;  // in spec order, keys unique

  // Throws InvalidArgument on an empty name, a parameter without '=', an empty key or value,
  // or a key given twice.
  static CodecSpec parse(std::string_view text);
};

class SpecReader {
 public:
  explicit SpecReader(CodecSpec spec);

  // Typed getters: the value of `key`, or `fallback` if absent. A value that does not parse
  // as the type throws InvalidArgument naming codec, key and value.
  double get_double(const std::string& key, double fallback);
  std::int64_t get_int(const std::string& key, std::int64_t fallback);
  std::uint64_t get_uint(const std::string& key, std::uint64_t fallback);
  bool get_bool(const std::string& key, bool fallback);  // 1/0, true/false, on/off, yes/no
  bool has(const std::string& key) const;

  // Throws InvalidArgument for the first key that no getter asked for, listing the known keys.
  void finish() const;
  // "name:key=value,..." with every key a getter asked for, in the order they were asked.
  std::string canonical() const;
  const std::string& codec_name() const { return spec_.name; }

 private:
  const std::string* find(const std::string& key) const;
  void record(const std::string& key, std::string value);

  CodecSpec spec_;
  std::vector<std::pair<std::string, std::string>> resolved_;  // key -> canonical value
};

}  // namespace ferry::compress
