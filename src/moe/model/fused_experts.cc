#include "moe/model/fused_experts.h"

#include <map>

#include "core/error.h"
#include "core/excerpt.h"
#include "moe/model/family.h"
#include "moe/model/tiny_model.h"

namespace ferry::moe {

std::unordered_map<std::string, FusedPart> fused_expert_parts(const MoeConfig& c) {
  std::unordered_map<std::string, FusedPart> parts;
  if (!family_of(c.model_type).tensors.fused_experts) return parts;
  TensorNames n(c);
  const std::int64_t E = c.num_experts, H = c.hidden_size, I = c.intermediate_size;
  for (int ml = 0; ml < c.num_moe_layers(); ++ml) {
    const int l = c.decoder_layer(ml);
    const std::string m = n.layer(l) + "mlp.experts.";
    const std::string gate_up = m + "gate_up_proj", down = m + "down_proj";
    for (int e = 0; e < E; ++e) {
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

}  // namespace

void read_fused_part(const FusedPart& p, DType dtype, const std::byte* source, float* dst) {
  const Slice s = slice_of(p);
  std::vector<float> slice(static_cast<std::size_t>(s.rows * s.cols));
  convert_to_f32(dtype, source + static_cast<std::size_t>(s.first) * dtype_size(dtype), slice.data(), slice.size());
  for_each_element(p, [&](std::int64_t from, std::int64_t to) { dst[to] = slice[static_cast<std::size_t>(from - s.first)]; });
}

std::vector<NamedTensor> fuse_expert_tensors(const MoeConfig& c, std::vector<NamedTensor> tensors) {
  const auto parts = fused_expert_parts(c);
  if (parts.empty()) return tensors;
  std::vector<NamedTensor> out;
  std::map<std::string, std::size_t> fused;  // source -> its index in out
  for (NamedTensor& t : tensors) {
    const auto it = parts.find(t.name);
    if (it == parts.end()) {
      out.push_back(std::move(t));
      continue;
    }
    const FusedPart& p = it->second;
    if (!fused.count(p.source)) {
      std::int64_t numel = 1;
      for (auto d : p.source_shape) numel *= d;
      fused[p.source] = out.size();
      out.push_back({p.source, p.source_shape, std::vector<float>(static_cast<std::size_t>(numel))});
    }
    std::vector<float>& dst = out[fused[p.source]].values;
    for_each_element(p, [&](std::int64_t from, std::int64_t to) {
      dst[static_cast<std::size_t>(from)] = t.values[static_cast<std::size_t>(to)];
    });
  }
  return out;
}

void refuse_mxfp4_experts(const std::string& name, const std::string& where) {
  FERRY_THROW(FormatError, "tensor '", excerpt(name), "' in '", where,
              "': MXFP4 experts: not yet implemented (a dequantized checkpoint, bf16 gate_up_proj / down_proj, loads)");
}

}  // namespace ferry::moe
