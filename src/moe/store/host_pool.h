// The host pool: every routed expert in host memory, float32, one contiguous block per expert
// laid out [w1 (I x H) | w3 (I x H) | w2 (H x I)] so that moving an expert is one byte span.
// Without data (experts that stream from disk) it only describes the layout and the count.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/error.h"
#include "moe/model/checkpoint.h"
#include "moe/store/expert_cache.h"

namespace ferry::moe {

struct ExpertLayout {
  std::int64_t hidden = 0;        // H
  std::int64_t intermediate = 0;  // I
  std::int64_t w1_offset() const { return 0; }  // in floats
  std::int64_t w3_offset() const { return intermediate * hidden; }
  std::int64_t w2_offset() const { return 2 * intermediate * hidden; }
  std::int64_t floats() const { return 3 * intermediate * hidden; }
  std::uint64_t bytes() const { return static_cast<std::uint64_t>(floats()) * 4; }
};

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
