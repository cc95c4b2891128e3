// GGUF, llama.cpp's model file (ggml/docs/gguf.md): a header of typed key/value metadata, a table
// of tensor descriptions, then the tensors' bytes, each at an offset aligned to
// `general.alignment` (default 32) from the start of the data section.
//
//   "GGUF" | u32 version (2 or 3) | u64 n_tensors | u64 n_kv
//   n_kv × (string key, u32 value type, value)            string = u64 length + bytes
//   n_tensors × (string name, u32 n_dims, u64 dims[n_dims] (fastest first), u32 ggml type,
//                u64 offset)
//   padding to the alignment | tensor data
//
// The reader maps the file and checks everything before anything is used: truncation, counts
// and lengths larger than the file, unknown value types, nested arrays, dimensions that are zero
// or overflow, rows that are not whole blocks, offsets that are misaligned, run past the end or
// overlap another tensor, duplicate names and keys. Each failure is one FormatError naming the
// file and the tensor or key.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/file.h"
#include "moe/quant/quant_type.h"

namespace ferry::moe::quant {

enum class GgufType : std::uint32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7,
  kString = 8, kArray = 9, kU64 = 10, kI64 = 11, kF64 = 12,
};
const char* gguf_type_name(GgufType type);

// One metadata value. Integers of every width are held in `i` (u64 beyond 2^63 is refused),
// floats in `f`; an array holds its elements in `strings` or `numbers` by its element type.
struct GgufValue {
  GgufType type = GgufType::kU32;
  GgufType element_type = GgufType::kU32;  // arrays only
  std::int64_t i = 0;
  double f = 0;
  bool b = false;
  std::string s;
  std::vector<std::string> strings;  // array of strings
  std::vector<double> numbers;       // array of numbers or bools (exact for |integers| < 2^53)

  bool is_integer() const;
  bool is_number() const { return is_integer() || type == GgufType::kF32 || type == GgufType::kF64; }
  std::size_t array_size() const { return element_type == GgufType::kString ? strings.size() : numbers.size(); }
};

struct GgufTensor {
  std::string name;
  std::vector<std::uint64_t> dims;  // ne[0] (the row length, contiguous) first
  QuantType type = QuantType::kF32;
  std::uint64_t offset = 0;         // from the start of the file
  std::uint64_t bytes = 0;
  std::uint64_t elements() const;
  std::uint64_t row_length() const { return dims.empty() ? 1 : dims[0]; }
  std::uint64_t rows() const { return elements() / row_length(); }
};

class GgufFile {
 public:
  // Maps and checks `path`; IoError when it cannot be read, FormatError naming the path and the
  // offending key or tensor otherwise.
  static GgufFile open(const std::string& path);
  // Checks `bytes` (which must outlive the result) as a GGUF file called `name` in messages.
  static GgufFile parse(std::span<const std::byte> bytes, std::string name);

  const std::string& path() const { return name_; }
  std::uint32_t version() const { return version_; }
  std::uint64_t alignment() const { return alignment_; }
  std::uint64_t data_offset() const { return data_offset_; }
  const std::map<std::string, GgufValue, std::less<>>& metadata() const { return metadata_; }
  const std::vector<GgufTensor>& tensors() const { return tensors_; }

  // nullptr when absent.
  const GgufValue* find(std::string_view key) const;
  const GgufTensor* find_tensor(std::string_view name) const;
  // Typed lookups: FormatError naming the key when it is absent or of another type.
  const GgufValue& get(std::string_view key) const;
  std::int64_t get_int(std::string_view key) const;
  double get_number(std::string_view key) const;
  const std::string& get_string(std::string_view key) const;
  // The bytes of a tensor of this file.
  std::span<const std::byte> data(const GgufTensor& tensor) const;
  // Drops the mapping's resident pages (MappedFile::release_pages); no-op for parsed bytes.
  void release_pages() const { map_.release_pages(); }

 private:
  MappedFile map_;                   // empty when parsed from caller-owned bytes
  std::span<const std::byte> bytes_; // the whole file
  std::string name_;
  std::uint32_t version_ = 0;
  std::uint64_t alignment_ = 32;
  std::uint64_t data_offset_ = 0;
  std::map<std::string, GgufValue, std::less<>> metadata_;
  std::vector<GgufTensor> tensors_;
  std::map<std::string, std::size_t, std::less<>> tensor_index_;
};

}  // namespace ferry::moe::quant
