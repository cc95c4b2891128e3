// Safetensors files: a strict, mmap-based reader and a small writer.
//
// Layout: 8-byte little-endian header length N, N bytes of JSON
// {"name": {"dtype": "BF16", "shape": [..], "data_offsets": [begin, end]}, "__metadata__": {..}},
// then the data section; offsets are relative to the data section.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "moe/model/dtype.h"
#include "core/file.h"

namespace ferry::moe {

struct TensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0;  // byte offset in the data section
  std::uint64_t end = 0;    // one past the last byte
  std::int64_t numel() const;
  std::uint64_t nbytes() const { return end - begin; }
};

// "[4, 8]" for messages.
std::string shape_string(const std::vector<std::int64_t>& shape);

// What the header of a safetensors file says, validated against the file size.
struct SafetensorsHeader {
  std::uint64_t data_offset = 0;  // 8 + header length: where the data section starts
  std::vector<TensorInfo> tensors;
  std::map<std::string, std::string> metadata;
};

// Parses and validates the first `size` bytes of a safetensors file at `data` (the checks of
// SafetensorsFile::open); `path` only names the file in messages. Throws FormatError.
SafetensorsHeader parse_safetensors_header(const std::byte* data, std::uint64_t size, const std::string& path);

class SafetensorsFile {
 public:
  // Maps and validates `path`: header length, JSON, dtypes, shape x dtype == span, spans inside
  // the file and not overlapping. Throws IoError (cannot read) or FormatError naming the file.
  static SafetensorsFile open(const std::string& path);

  const std::string& path() const { return file_.path(); }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // nullptr when absent.
  const TensorInfo* find(const std::string& name) const;
  // Throws FormatError "tensor 'name' missing from FILE" when absent.
  const TensorInfo& at(const std::string& name) const;
  // Pointer to the tensor's first byte inside the mapping (valid while this object lives).
  const std::byte* data(const TensorInfo& info) const { return file_.data() + data_offset_ + info.begin; }
  // Absolute byte offset of the tensor in the file (for direct reads).
  std::uint64_t file_offset(const TensorInfo& info) const { return data_offset_ + info.begin; }
  void release_pages() const { file_.release_pages(); }  // MappedFile::release_pages

 private:
  MappedFile file_;
  std::uint64_t data_offset_ = 0;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string, std::size_t> index_;
  std::map<std::string, std::string> metadata_;
};

// Collects tensors and writes one safetensors file (data packed in insertion order, 8-aligned).
class SafetensorsWriter {
 public:
  // Adds a tensor whose bytes are `data` (size must equal numel x dtype size).
  void add(const std::string& name, DType dtype, std::vector<std::int64_t> shape, const void* data,
           std::size_t nbytes);
  // Adds float32 values converted to `dtype`.
  void add_f32(const std::string& name, DType dtype, std::vector<std::int64_t> shape, const float* values);
  void set_metadata(const std::string& key, const std::string& value) { metadata_[key] = value; }
  // Writes the file (parents created); throws IoError.
  void write(const std::string& path) const;
  std::uint64_t data_bytes() const { return data_.size(); }
  std::vector<std::string> names() const;

 private:
  struct Entry {
    std::string name;
    DType dtype;
    std::vector<std::int64_t> shape;
    std::uint64_t begin, end;
  };
  std::vector<Entry> entries_;
  std::vector<std::byte> data_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace ferry::moe
