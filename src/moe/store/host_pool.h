// The host pool: every routed expert in host memory, float32, one contiguous block per expert
// (ExpertLayout, expert_layout.h).
// Without data (experts that stream from disk) it only describes the layout and the count.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/error.h"
#include "moe/model/checkpoint.h"
#include "moe/store/expert_cache.h"
#include "moe/store/expert_layout.h"

namespace ferry::moe {

class HostPool {
 public:
  // Converts every expert of `ck` to float32 (checks shapes; throws FormatError naming a tensor).
  // with_data false: the shapes are checked, nothing is read or allocated.
  static std::unique_ptr<HostPool> load(const Checkpoint& ck, bool with_data = true);

  bool has_data() const { return !data_.empty(); }
  const float* expert(ExpertId id) const {
    FERRY_CHECK(has_data(), "expert ", id.layer, "/", id.expert, " has no host copy (the experts stream from disk)");
    return data_.data() + (static_cast<std::size_t>(id.layer) * num_experts_ + id.expert) * layout_.floats();
  }
  const ExpertLayout& layout() const { return layout_; }
  int num_layers() const { return num_layers_; }
  int num_experts() const { return num_experts_; }
  std::uint64_t total_bytes() const { return layout_.bytes() * num_layers_ * num_experts_; }

 private:
  ExpertLayout layout_;
  int num_layers_ = 0, num_experts_ = 0;
  std::vector<float> data_;
};

}  // namespace ferry::moe
