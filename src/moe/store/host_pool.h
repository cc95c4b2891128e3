// The host pool: every routed expert in host memory, one contiguous block per expert in the
// experts' weight format (ExpertLayout, expert_layout.h: float32 or a GGUF block format).
// Without data (experts that stream from disk) it only describes the layout and the count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/error.h"
#include "moe/model/checkpoint.h"
#include "moe/quant/quant_type.h"
#include "moe/store/expert_cache.h"
#include "moe/store/expert_layout.h"

namespace ferry::moe {

class HostPool {
 public:
  // Reads every expert of `ck` and stores it in `format` (float32 as read; a block format
  // quantized row by row with the reference quantizers, moe/quant/quantize.h). Checks shapes
  // (FormatError naming a tensor) and that rows are whole blocks of `format` (InvalidArgument).
  // with_data false: the shapes are checked, nothing is read or allocated.
  static std::unique_ptr<HostPool> load(const Checkpoint& ck, bool with_data = true,
                                        quant::QuantType format = quant::QuantType::kF32);

  bool has_data() const { return !data_.empty(); }
  const std::byte* expert(ExpertId id) const {
    FERRY_CHECK(has_data(), "expert ", id.layer, "/", id.expert, " has no host copy (the experts stream from disk)");
    return data_.data() + (static_cast<std::size_t>(id.layer) * num_experts_ + id.expert) * layout_.bytes();
  }
  const ExpertLayout& layout() const { return layout_; }
  int num_layers() const { return num_layers_; }
  int num_experts() const { return num_experts_; }
  std::uint64_t total_bytes() const { return layout_.bytes() * num_layers_ * num_experts_; }

 private:
  ExpertLayout layout_;
  int num_layers_ = 0, num_experts_ = 0;
  std::vector<std::byte> data_;
};

}  // namespace ferry::moe
