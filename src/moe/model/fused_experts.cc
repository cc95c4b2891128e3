#include "moe/model/fused_experts.h"

#include <map>

#include "core/error.h"
#include "moe/model/family.h"
#include "moe/model/tiny_model.h"
#include "moe/quant/blocks.h"
#include "moe/quant/mxfp4_hf.h"
#include "moe/quant/quant_type.h"
#include "moe/quant/quantize.h"

namespace ferry::moe {

std::unordered_map<std::string, FusedPart> fused_expert_parts(const MoeConfig& c) {
  std::unordered_map<std::string, FusedPart> parts;
  if (!family_of(c.model_type).tensors.fused_experts) return parts;
  TensorNames n(c);
  const std::int64_t E = c.num_experts, H = c.hidden_size, I = c.intermediate_size;
  const std::int64_t B = quant::kHfMxfp4BlockBytes, K = quant::kQK_MXFP4;
  for (int ml = 0; ml < c.num_moe_layers(); ++ml) {
    const int l = c.decoder_layer(ml);
    const std::string m = n.layer(l) + "mlp.experts.";
    const std::string gate_up = m + "gate_up_proj", down = m + "down_proj";
    for (int e = 0; e < E; ++e) {
      if (c.mxfp4_experts) {  // rows of blocks: gate and up alternate
        parts[n.expert(l, e, 1)] = {gate_up, {E, 2 * I, H / K, B}, {I, H}, e, 2, 0, false, true};
        parts[n.expert(l, e, 3)] = {gate_up, {E, 2 * I, H / K, B}, {I, H}, e, 2, 1, false, true};
        parts[n.expert(l, e, 2)] = {down, {E, H, I / K, B}, {H, I}, e, 1, 0, false, true};
        continue;
      }
      parts[n.expert(l, e, 1)] = {gate_up, {E, H, 2 * I}, {I, H}, e, 2, 0, true};
      parts[n.expert(l, e, 3)] = {gate_up, {E, H, 2 * I}, {I, H}, e, 2, 1, true};
      parts[n.expert(l, e, 2)] = {down, {E, I, H}, {H, I}, e, 1, 0, true};
    }
    parts[n.expert_bias(l, 1)] = {gate_up + "_bias", {E, 2 * I}, {E, I}, -1, 2, 0, false};
    parts[n.expert_bias(l, 3)] = {gate_up + "_bias", {E, 2 * I}, {E, I}, -1, 2, 1, false};
    parts[n.expert_bias(l, 2)] = {down + "_bias", {E, H}, {E, H}, -1, 1, 0, false};
  }
  return parts;
}

namespace {

// The slice a part reads: rows x cols of the source's last two dims, and its first element.
struct Slice {
  std::int64_t rows, cols, first;
};

Slice slice_of(const FusedPart& p) {
  const auto& s = p.source_shape;
  const std::int64_t rows = s[s.size() - 2], cols = s.back();
  return {rows, cols, p.expert < 0 ? 0 : p.expert * rows * cols};
}

// Element (r, k) of the part's untransposed view is (r, offset + k * stride) of the slice; the part
// stores it at (r, k), or (k, r) when transposed.
template <typename F>
void for_each_element(const FusedPart& p, F&& f) {
  const Slice s = slice_of(p);
  const std::int64_t kept = s.cols / p.stride;
  for (std::int64_t r = 0; r < s.rows; ++r)
    for (std::int64_t k = 0; k < kept; ++k)
      f(s.first + r * s.cols + p.offset + k * p.stride, p.transpose ? k * s.rows + r : r * kept + k);
}

// The source row (of every expert's rows, MXFP4) holding the part's row `row`.
std::int64_t mxfp4_source_row(const FusedPart& p, std::int64_t row) {
  return p.expert * p.source_shape[1] + p.offset + row * p.stride;
}

// The HF tensors an MXFP4 source is written as: blocks then scales, zeroed.
void add_mxfp4_source(const FusedPart& p, std::vector<NamedTensor>& out) {
  std::int64_t blocks = 1;
  for (auto d : p.scales_shape()) blocks *= d;
  out.push_back(NamedTensor::of_bytes(p.blocks_name(), p.source_shape,
                                      std::vector<std::uint8_t>(static_cast<std::size_t>(blocks) * quant::kHfMxfp4BlockBytes)));
  out.push_back(NamedTensor::of_bytes(p.scales_name(), p.scales_shape(),
                                      std::vector<std::uint8_t>(static_cast<std::size_t>(blocks))));
}

// Part `t`'s float rows quantized to MXFP4 into its source's blocks and scales.
void write_mxfp4_part(const FusedPart& p, const NamedTensor& t, NamedTensor& blocks, NamedTensor& scales) {
  const std::int64_t cols = p.shape[1], per_row = cols / quant::kQK_MXFP4;
  std::vector<std::byte> row(quant::quant_row_bytes(quant::QuantType::kMXFP4, static_cast<std::size_t>(cols)));
  for (std::int64_t r = 0; r < p.shape[0]; ++r) {
    quant::quantize_row(quant::QuantType::kMXFP4, t.values.data() + r * cols, row.data(), static_cast<std::size_t>(cols));
    const auto first = static_cast<std::size_t>(mxfp4_source_row(p, r) * per_row);
    quant::mxfp4_blocks_to_hf(reinterpret_cast<const std::uint8_t*>(row.data()), static_cast<std::size_t>(per_row),
                              scales.bytes.data() + first, blocks.bytes.data() + first * quant::kHfMxfp4BlockBytes);
  }
}

}  // namespace

void read_fused_part(const FusedPart& p, DType dtype, const std::byte* source, float* dst) {
  const Slice s = slice_of(p);
  std::vector<float> slice(static_cast<std::size_t>(s.rows * s.cols));
  convert_to_f32(dtype, source + static_cast<std::size_t>(s.first) * dtype_size(dtype), slice.data(), slice.size());
  for_each_element(p, [&](std::int64_t from, std::int64_t to) { dst[to] = slice[static_cast<std::size_t>(from - s.first)]; });
}

void read_mxfp4_part(const FusedPart& p, const std::byte* blocks, const std::byte* scales, std::byte* dst) {
  const std::int64_t per_row = p.source_shape[2];
  const std::size_t row_bytes = static_cast<std::size_t>(per_row) * sizeof(quant::BlockMXFP4);
  for (std::int64_t r = 0; r < p.shape[0]; ++r) {
    const auto first = static_cast<std::size_t>(mxfp4_source_row(p, r) * per_row);
    quant::mxfp4_blocks_from_hf(reinterpret_cast<const std::uint8_t*>(scales) + first,
                                reinterpret_cast<const std::uint8_t*>(blocks) + first * quant::kHfMxfp4BlockBytes,
                                static_cast<std::size_t>(per_row),
                                reinterpret_cast<std::uint8_t*>(dst) + static_cast<std::size_t>(r) * row_bytes);
  }
}

std::vector<NamedTensor> fuse_expert_tensors(const MoeConfig& c, std::vector<NamedTensor> tensors) {
  const auto parts = fused_expert_parts(c);
  if (parts.empty()) return tensors;
  std::vector<NamedTensor> out;
  std::map<std::string, std::size_t> fused;  // source -> its index in out (MXFP4: its blocks', scales next)
  for (NamedTensor& t : tensors) {
    const auto it = parts.find(t.name);
    if (it == parts.end()) {
      out.push_back(std::move(t));
      continue;
    }
    const FusedPart& p = it->second;
    if (!fused.count(p.source)) {
      fused[p.source] = out.size();
      if (p.mxfp4) {
        add_mxfp4_source(p, out);
      } else {
        std::int64_t numel = 1;
        for (auto d : p.source_shape) numel *= d;
        out.push_back({p.source, p.source_shape, std::vector<float>(static_cast<std::size_t>(numel))});
      }
    }
    const std::size_t at = fused[p.source];
    if (p.mxfp4) {
      write_mxfp4_part(p, t, out[at], out[at + 1]);
      continue;
    }
    std::vector<float>& dst = out[at].values;
    for_each_element(p, [&](std::int64_t from, std::int64_t to) {
      dst[static_cast<std::size_t>(from)] = t.values[static_cast<std::size_t>(to)];
    });
  }
  return out;
}

}  // namespace ferry::moe
