// Writes a GGUF file (version 3, see gguf_file.h for the layout): metadata in the order added,
// then the tensor table and each tensor's bytes at the next multiple of the alignment. The file
// is written atomically (PATH.part, then renamed).
//
// Tensors are declared first (name, dims, type) and their bytes produced one at a time while the
// file is written, so that a model larger than memory (Mixtral-8x7B: 90 GiB in float32) streams
// through one tensor's buffer: add_tensor() with a fill callback. add_tensor() with the bytes
// themselves keeps them in memory until written (small files, tests). Both write the same bytes.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "moe/quant/gguf_file.h"

namespace ferry::moe::quant {

class GgufWriter {
 public:
  // Produces a tensor's bytes into `out`, which has exactly the tensor's size.
  using TensorFill = std::function<void(std::span<std::byte> out)>;

  explicit GgufWriter(std::uint64_t alignment = 32);

  void add_u32(const std::string& key, std::uint32_t value);
  void add_u64(const std::string& key, std::uint64_t value);
  void add_f32(const std::string& key, float value);
  void add_bool(const std::string& key, bool value);
  void add_string(const std::string& key, const std::string& value);
  void add_strings(const std::string& key, const std::vector<std::string>& values);
  void add_f32s(const std::string& key, const std::vector<float>& values);
  void add_i32s(const std::string& key, const std::vector<std::int32_t>& values);
  // A value as GgufFile reads it: scalars of every type but 64-bit floats beyond f32's precision,
  // arrays of strings or of numbers (element_type). InvalidArgument for a nested array.
  void add(const std::string& key, const GgufValue& value);
  // A tensor of `dims` (row length first) in `type`; `bytes` must hold exactly its blocks.
  void add_tensor(const std::string& name, std::vector<std::uint64_t> dims, QuantType type,
                  std::vector<std::byte> bytes);
  // A tensor whose bytes `fill` produces when write() or serialize() reaches it (once, in the
  // order the tensors were added).
  void add_tensor(const std::string& name, std::vector<std::uint64_t> dims, QuantType type, TensorFill fill);

  std::size_t tensor_count() const { return tensors_.size(); }
  // Bytes of the whole file once written.
  std::uint64_t file_bytes() const;

  // The whole file in memory (runs the fills).
  std::vector<std::byte> serialize() const;
  // Streams the file to `path`, one tensor's bytes in memory at a time. IoError naming the path.
  void write(const std::string& path) const;

 private:
  void key(const std::string& key, GgufType type);
  void put_scalar(GgufType type, const GgufValue& value);
  template <typename T>
  static void put(std::vector<std::byte>& out, T value);
  static void put_string(std::vector<std::byte>& out, const std::string& s);
  // The magic, the counts, the metadata and the tensor table, padded to the alignment.
  std::vector<std::byte> header() const;
  // Calls `sink` with the header, then each tensor's bytes and padding, in file order.
  void emit(const std::function<void(std::span<const std::byte>)>& sink) const;

  struct Tensor {
    std::string name;
    std::vector<std::uint64_t> dims;
    QuantType type;
    std::uint64_t bytes = 0;
    std::vector<std::byte> data;  // add_tensor() with bytes
    TensorFill fill;              // add_tensor() with a fill
  };
  std::uint64_t aligned(std::uint64_t n) const { return (n + alignment_ - 1) / alignment_ * alignment_; }
  void check_tensor(const std::string& name, const std::vector<std::uint64_t>& dims, QuantType type) const;

  std::uint64_t alignment_;
  std::uint64_t n_kv_ = 0;
  std::vector<std::byte> kv_;  // serialized metadata
  std::vector<Tensor> tensors_;
};

}  // namespace ferry::moe::quant
