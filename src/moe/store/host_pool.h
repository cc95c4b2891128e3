// The host pool: every routed expert in host memory, one contiguous block per expert in the
// experts' weight format (ExpertLayout, expert_layout.h: float32 or a GGUF block format).
// Without data (experts that stream from disk) it only describes the layout and the count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "core/error.h"
#include "moe/model/checkpoint.h"
#include "moe/quant/quant_type.h"
#include "moe/store/expert_cache.h"
#include "moe/store/expert_layout.h"

namespace ferry::moe {

// The layout the experts of `ck` are stored in: float32 for a safetensors checkpoint (MXFP4 for
// gpt-oss's MXFP4 experts, config.mxfp4_experts); for a GGUF
// file the types of its ffn_{gate,up,down}_exps tensors: one type for gate and up in every layer,
// and down's type per layer (ExpertLayout::layer_down when it changes, as in Q4_K_M files), each
// a type the engine computes on (quant_type_computed) — else InvalidArgument naming the tensors
// and types (and --weights, which converts them).
ExpertLayout expert_layout_as_stored(const Checkpoint& ck);

class HostPool {
 public:
  // Reads every expert of `ck` and stores it in `format` (float32 as read; a block format
  // quantized row by row with the reference quantizers, moe/quant/quantize.h). Checks shapes
  // (FormatError naming a tensor) and that rows are whole blocks of `format` (InvalidArgument).
  // with_data false: the shapes are checked, nothing is read or allocated.
  // No format: as stored (expert_layout_as_stored). A projection that the checkpoint stores in the
  // pool's format (Checkpoint::stored_blocks) is copied block for block; any other is dequantized
  // and quantized again.
  static std::unique_ptr<HostPool> load(const Checkpoint& ck, bool with_data = true,
                                        std::optional<quant::QuantType> format = std::nullopt);

  bool has_data() const { return !data_.empty(); }
  const std::byte* expert(ExpertId id) const {
    FERRY_CHECK(has_data(), "expert ", id.layer, "/", id.expert, " has no host copy (the experts stream from disk)");
    return data_.data() + (static_cast<std::size_t>(id.layer) * num_experts_ + id.expert) * layout_.bytes();
  }
  // The experts' slot layout (every expert occupies layout().bytes()), and the bytes expert `id`
  // really has: its layer's formats (ExpertLayout::of_layer), what a link moves.
  const ExpertLayout& layout() const { return layout_; }
  std::uint64_t expert_bytes(ExpertId id) const { return layout_.of_layer(id.layer).bytes(); }
  int num_layers() const { return num_layers_; }
  int num_experts() const { return num_experts_; }
  std::uint64_t total_bytes() const { return layout_.bytes() * num_layers_ * num_experts_; }

 private:
  ExpertLayout layout_;
  int num_layers_ = 0, num_experts_ = 0;
  std::vector<std::byte> data_;
};

}  // namespace ferry::moe
