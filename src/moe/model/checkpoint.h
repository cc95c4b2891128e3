// A checkpoint directory: config.json plus one safetensors file or shards listed in
// model.safetensors.index.json ({"weight_map": {tensor: shard file}}); or a GGUF file
// (gguf_model.h), read through the same HF tensor names. Every loader opens a model here.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "moe/model/config.h"
#include "moe/model/fused_experts.h"
#include "moe/model/gguf_model.h"
#include "moe/model/safetensors.h"
#include "moe/quant/quant_type.h"

namespace ferry::moe {

// One tensor located in one of the shard files.
struct TensorRef {
  const SafetensorsFile* file;  // owned by the Checkpoint, lives as long as it
  const TensorInfo* info;       // owned by `file`
};

// Parses the text of model.safetensors.index.json (`origin` names it in messages): the
// (tensor, shard file) pairs of its "weight_map", in file order. A shard must be a plain file
// name inside the checkpoint directory (no '/', not "." or ".."). Throws FormatError.
std::vector<std::pair<std::string, std::string>> parse_safetensors_index(const std::string& text,
                                                                         const std::string& origin);

// FormatError "tensor NAME in WHERE holds nan at element I: weights must be finite" when one of
// the n values `v` (elements first.. of the tensor) is NaN or Inf.
void require_finite(const float* v, std::size_t n, const std::string& name, const std::string& where,
                    std::size_t first = 0);

class Checkpoint {
 public:
  // Opens DIR: reads config.json and maps every shard; or, when the path is a file, maps it as a
  // GGUF file. Throws IoError / FormatError naming files.
  static std::unique_ptr<Checkpoint> open(const std::string& dir);

  // The directory, or the GGUF file's path.
  const std::string& dir() const { return dir_; }
  const MoeConfig& config() const { return config_; }
  bool contains(const std::string& name) const {
    return gguf_ ? gguf_->contains(name) : find(name).file != nullptr || fused_.count(name) > 0;
  }
  // The GGUF file the model was opened from, or nullptr for a safetensors checkpoint.
  const GgufModel* gguf() const { return gguf_.get(); }
  // A safetensors tensor ({nullptr, nullptr} when absent, and always for a GGUF file).
  TensorRef find(const std::string& name) const;
  // Throws FormatError "tensor 'X' missing from checkpoint DIR" when absent, or naming the fused
  // tensor it is a part of (fused_experts.h: it has no bytes of its own to read in place).
  TensorRef at(const std::string& name) const;
  // Checks the shape and converts the tensor to float32 into `dst` (numel floats; MXFP4 experts
  // dequantized).
  void read_f32(const std::string& name, const std::vector<std::int64_t>& expected_shape, float* dst) const;
  // Shape check only; throws FormatError naming tensor, expected and found shapes, or a safetensors
  // tensor of bytes (U8) where weights are expected. The TensorRef is empty for a GGUF file.
  TensorRef expect(const std::string& name, const std::vector<std::int64_t>& expected_shape) const;
  // The block format `name` is stored in where read_blocks hands it out as stored: a GGUF file's
  // type, or MXFP4 for a part of a safetensors checkpoint's MXFP4 experts; nullopt for a
  // safetensors tensor of floats (read_f32 reads it).
  std::optional<quant::QuantType> stored_blocks(const std::string& name) const;
  // The tensor's blocks (quant_matrix_bytes of its shape) into `dst`, in HF's row order: a GGUF
  // file's as stored (q/k rows un-permuted), MXFP4 experts repacked from HF's packing to ggml's
  // (fused_experts.h). FormatError when a block's scale is not finite (finite_blocks.h), naming
  // the tensor `name`, or, for an expert (`what`: "layer 1, expert 3"), the file's tensor that holds
  // it (a GGUF file's stacked one, HF's *_scales) and `what`; InvalidArgument without stored_blocks.
  void read_blocks(const std::string& name, std::byte* dst, const std::string& what = "") const;
  const std::vector<std::unique_ptr<SafetensorsFile>>& files() const { return files_; }
  // The file's tensors that `name` is read from: the fused tensor it is a part of (MXFP4: its
  // blocks and scales), else itself.
  std::vector<std::string> stored_names(const std::string& name) const;
  // Drops the mapped files' resident pages (MappedFile::release_pages): after the dense weights
  // are copied out, when the experts stream from disk and the file may be larger than memory.
  void release_pages() const;

 private:
  std::string dir_;
  MoeConfig config_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::unordered_map<std::string, std::size_t> shard_of_;  // tensor -> index into files_
  std::unique_ptr<GgufModel> gguf_;                         // set when opened from a GGUF file
  std::unordered_map<std::string, FusedPart> fused_;        // the parts of fused experts, by ferry's name
  // The source of a fused part (MXFP4: its blocks), checked: present, its shape and dtype (floats,
  // or MXFP4's blocks and scales as U8).
  TensorRef fused_source(const FusedPart& part) const;
  // The fused part `name` is read from, or nullptr for a tensor stored apart (or absent).
  const FusedPart* part_of(const std::string& name) const;
};

}  // namespace ferry::moe
