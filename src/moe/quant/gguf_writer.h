// Writes a GGUF file (version 3, see gguf_file.h for the layout): metadata in the order added,
// then the tensor table and each tensor's bytes at the next multiple of the alignment. The file
// is written atomically (PATH.part, then renamed).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "moe/quant/gguf_file.h"

namespace ferry::moe::quant {

class GgufWriter {
 public:
  explicit GgufWriter(std::uint64_t alignment = 32);

  void add_u32(const std::string& key, std::uint32_t value);
  void add_i32(const std::string& key, std::int32_t value);
  void add_u64(const std::string& key, std::uint64_t value);
  void add_f32(const std::string& key, float value);
  void add_bool(const std::string& key, bool value);
  void add_string(const std::string& key, const std::string& value);
  void add_strings(const std::string& key, const std::vector<std::string>& values);
  void add_f32s(const std::string& key, const std::vector<float>& values);
  void add_i32s(const std::string& key, const std::vector<std::int32_t>& values);
  // A tensor of `dims` (row length first) in `type`; `bytes` must hold exactly its blocks.
  void add_tensor(const std::string& name, std::vector<std::uint64_t> dims, QuantType type,
                  std::vector<std::byte> bytes);

  // The whole file.
  std::vector<std::byte> serialize() const;
  void write(const std::string& path) const;

 private:
  void key(const std::string& key, GgufType type);
  template <typename T>
  void put(std::vector<std::byte>& out, T value) const;
  void put_string(std::vector<std::byte>& out, const std::string& s) const;

  struct Tensor {
    std::string name;
    std::vector<std::uint64_t> dims;
    QuantType type;
    std::vector<std::byte> bytes;
  };
  std::uint64_t alignment_;
  std::uint64_t n_kv_ = 0;
  std::vector<std::byte> kv_;  // serialized metadata
  std::vector<Tensor> tensors_;
};

}  // namespace ferry::moe::quant
