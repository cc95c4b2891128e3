// One routed expert's weights: w1 and w3 (I x H) and w2 (H x I), each stored row by row in the
// expert's weight format (float32, or a GGUF block format: moe/quant), held in memory in the
// kernels' layout of those rows (the same bytes, reordered: moe/quant/row_groups.h). Its size is computed here
// and nowhere else — the host pool and its links, the device slots, the simulator's model shapes —
// so that a weight format changes it everywhere at once.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "moe/quant/quant_type.h"
#include "moe/quant/row_groups.h"

namespace ferry::moe {

// Parameters of one expert of model width `hidden` (H) and FFN width `intermediate` (I).
constexpr std::uint64_t expert_params(std::int64_t hidden, std::int64_t intermediate) {
  return 3 * static_cast<std::uint64_t>(hidden) * static_cast<std::uint64_t>(intermediate);
}

// Bytes of one expert stored at `bytes_per_param` (4: float32; 2: bf16; 4.5/8: Q4_0), rounded up.
inline std::uint64_t expert_bytes(std::int64_t hidden, std::int64_t intermediate, double bytes_per_param) {
  return static_cast<std::uint64_t>(
      std::ceil(static_cast<double>(expert_params(hidden, intermediate)) * bytes_per_param));
}

// Bytes per parameter of a weight format (Q4_0: 18/32 = 0.5625, Q4_K: 144/256, Q8_0: 34/32).
inline double format_bytes_per_param(quant::QuantType format) {
  const auto& t = quant::quant_traits(format);
  return static_cast<double>(t.block_bytes) / static_cast<double>(t.block_elems);
}

// The host pool's layout: [w1 (I x H) | w3 (I x H) | w2 (H x I)] in one contiguous block of
// rows, so that moving an expert is one byte span. w1 and w3 are in `format`, w2 in `down_format`
// (equal unless the experts come from a GGUF file whose ffn_down is stored in another type, as
// llama.cpp's Q4_K_M stores it in Q6_K). Where that type changes from layer to layer (Q4_K_M:
// Q6_K in the layers llama-quantize gives more bits, Q4_K in the others), `layer_down` holds each
// MoE layer's, down_format is the widest of them and sizes every expert's slot (pool, budget), and
// of_layer(l) is layer l's own layout: the bytes its experts really have, move and compute with.
struct ExpertLayout {
  std::int64_t hidden = 0;        // H
  std::int64_t intermediate = 0;  // I
  quant::QuantType format = quant::QuantType::kF32;       // w1 and w3
  quant::QuantType down_format = quant::QuantType::kF32;  // w2 (the widest when layer_down is set)
  std::vector<quant::QuantType> layer_down;               // w2 per MoE layer when it differs, else empty

  ExpertLayout() = default;
  // One format for all three projections unless `down` is given.
  ExpertLayout(std::int64_t h, std::int64_t i, quant::QuantType f) : hidden(h), intermediate(i), format(f), down_format(f) {}
  ExpertLayout(std::int64_t h, std::int64_t i, quant::QuantType f, quant::QuantType down)
      : hidden(h), intermediate(i), format(f), down_format(down) {}

  // Bytes of w1 (or w3): I rows of H weights; of w2: H rows of I weights.
  std::uint64_t up_bytes() const {
    return quant::quant_matrix_bytes(format, static_cast<std::size_t>(intermediate), static_cast<std::size_t>(hidden));
  }
  std::uint64_t down_bytes() const {
    return quant::quant_matrix_bytes(down_format, static_cast<std::size_t>(hidden),
                                     static_cast<std::size_t>(intermediate));
  }
  std::uint64_t w1_offset() const { return 0; }  // in bytes
  std::uint64_t w3_offset() const { return up_bytes(); }
  std::uint64_t w2_offset() const { return 2 * up_bytes(); }
  std::uint64_t bytes() const { return 2 * up_bytes() + down_bytes(); }
  std::uint64_t params() const { return expert_params(hidden, intermediate); }
  // Layer l's layout (its own w2 format; bytes() its experts' real size).
  ExpertLayout of_layer(int layer) const {
    if (layer_down.empty()) return *this;
    return {hidden, intermediate, format, layer_down.at(static_cast<std::size_t>(layer))};
  }
  // An expert's bytes at `data`, as stored (each projection's rows one after the other) → the
  // kernels' layout (moe/quant/row_groups.h), in place.
  void to_kernel_layout(std::byte* data) const {
    const auto H = static_cast<std::size_t>(hidden), I = static_cast<std::size_t>(intermediate);
    quant::to_row_groups(format, data + w1_offset(), I, H);
    quant::to_row_groups(format, data + w3_offset(), I, H);
    quant::to_row_groups(down_format, data + w2_offset(), H, I);
  }
  // The format name, "Q4_K", "Q4_K+Q6_K" (w1/w3 + w2) or "Q4_K+Q4_K/Q6_K" (w2 by layer).
  std::string format_name() const {
    std::string s = quant::quant_name(format);
    std::vector<quant::QuantType> downs = layer_down.empty() ? std::vector{down_format} : layer_down;
    std::sort(downs.begin(), downs.end());
    downs.erase(std::unique(downs.begin(), downs.end()), downs.end());
    if (downs.size() == 1 && downs[0] == format) return s;
    for (std::size_t i = 0; i < downs.size(); ++i) s += (i ? "/" : "+") + std::string(quant::quant_name(downs[i]));
    return s;
  }
};

}  // namespace ferry::moe
