// A GGUF file read as the Hugging Face checkpoint it was written from (Checkpoint::open of a
// .gguf path): the config from the metadata (gguf_config), each HF tensor found through
// gguf_tensor_plan (the same plan `ferry moe quantize` writes by; expert e of a stacked
// ffn_*_exps tensor is its slice e), read as float32 by dequantizing its stored type
// (moe/quant/dequantize.h) and undoing the q/k row permutation of the architectures that permute,
// or handed out as stored (the host pool copies expert blocks as they are).
//
// Every tensor of the plan must be in the file with the plan's dims, and every tensor of the file
// in the plan; anything else is one FormatError naming the file and the tensor.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "moe/model/config.h"
#include "moe/quant/gguf_file.h"

namespace ferry::moe {

// One HF tensor as the file stores it: its rows in `type`, `bytes` inside the mapped file.
struct StoredTensor {
  quant::QuantType type = quant::QuantType::kF32;
  std::span<const std::byte> bytes;
  std::string gguf_name;       // the GGUF tensor it is (a slice of)
  std::uint64_t file_offset = 0;  // where `bytes` begin in the file (for reads that bypass the mapping)
};

class GgufModel {
 public:
  // Maps and checks `path`. IoError / FormatError naming the file.
  static std::unique_ptr<GgufModel> open(const std::string& path);

  const std::string& path() const { return file_.path(); }
  const MoeConfig& config() const { return config_; }
  const quant::GgufFile& file() const { return file_; }
  bool contains(const std::string& hf_name) const { return entries_.count(hf_name) != 0; }
  // The HF (row-major) shape; FormatError "tensor 'X' missing from GGUF 'PATH'" when absent.
  const std::vector<std::int64_t>& shape(const std::string& hf_name) const;
  // The tensor's numel floats, dequantized and un-permuted.
  void read_f32(const std::string& hf_name, float* dst) const;
  // The tensor's blocks as stored. InvalidArgument for a permuted tensor (its rows are not HF's).
  StoredTensor stored(const std::string& hf_name) const;
  // The tensor's block format, and the GGUF tensor it is (a slice of).
  quant::QuantType stored_type(const std::string& hf_name) const;
  const std::string& gguf_name(const std::string& hf_name) const;
  // The tensor's blocks in HF's row order (q/k rows un-permuted), all its bytes to `dst`.
  void read_blocks(const std::string& hf_name, std::byte* dst) const;

 private:
  struct Entry {
    const quant::GgufTensor* tensor;  // owned by file_
    int slice = -1;                   // expert index in a stacked tensor, -1 for the whole tensor
    int permute_heads = 0;            // > 0: rows permuted over this many heads
    std::vector<std::int64_t> shape;  // HF's
  };
  const Entry& entry(const std::string& hf_name) const;
  std::span<const std::byte> bytes(const Entry& e) const;

  quant::GgufFile file_;
  MoeConfig config_;
  std::unordered_map<std::string, Entry> entries_;  // HF name -> where it lies
};

}  // namespace ferry::moe
