// One routed expert's weights: w1 and w3 (I x H) and w2 (H x I). Its size is computed here and
// nowhere else — the host pool and its links, the device slots, the simulator's model shapes — so
// that a weight format changes it everywhere at once.
#pragma once

#include <cmath>
#include <cstdint>

namespace ferry::moe {

// Parameters of one expert of model width `hidden` (H) and FFN width `intermediate` (I).
constexpr std::uint64_t expert_params(std::int64_t hidden, std::int64_t intermediate) {
  return 3 * static_cast<std::uint64_t>(hidden) * static_cast<std::uint64_t>(intermediate);
}

// Bytes of one expert stored at `bytes_per_param` (4: the host pool's float32; 2: bf16), rounded up.
inline std::uint64_t expert_bytes(std::int64_t hidden, std::int64_t intermediate, double bytes_per_param) {
  return static_cast<std::uint64_t>(
      std::ceil(static_cast<double>(expert_params(hidden, intermediate)) * bytes_per_param));
}

// The host pool's float32 layout: [w1 (I x H) | w3 (I x H) | w2 (H x I)] in one contiguous block,
// so that moving an expert is one byte span.
struct ExpertLayout {
  std::int64_t hidden = 0;        // H
  std::int64_t intermediate = 0;  // I
  std::int64_t w1_offset() const { return 0; }  // in floats
  std::int64_t w3_offset() const { return intermediate * hidden; }
  std::int64_t w2_offset() const { return 2 * intermediate * hidden; }
  std::int64_t floats() const { return static_cast<std::int64_t>(expert_params(hidden, intermediate)); }
  std::uint64_t bytes() const { return expert_bytes(hidden, intermediate, sizeof(float)); }
};

}  // namespace ferry::moe
