#include "moe/model/weights.h"

#include <torch/types.h>
#include <torch/utils.h>

#include <cstring>

#include "core/error.h"
#include "moe/model/gguf_layout.h"
#include "moe/quant/dequantize.h"
#include "moe/quant/row_groups.h"

namespace ferry::moe {

torch::Tensor Weight::to_float() const {
  if (type == quant::QuantType::kF32 || !values.defined()) return values;
  auto blocks = values.clone();
  quant::from_row_groups(type, blocks.data_ptr<std::uint8_t>(), static_cast<std::size_t>(rows),
                         static_cast<std::size_t>(cols));
  auto out = torch::empty({rows, cols}, torch::kFloat32);
  quant::dequantize_row(type, blocks.data_ptr<std::uint8_t>(), out.data_ptr<float>(), static_cast<std::size_t>(rows * cols));
  return out;
}

torch::Tensor Weight::select_rows(const torch::Tensor& ids) const {
  if (type == quant::QuantType::kF32) return values.index_select(0, ids);
  const torch::Tensor idx = ids.to(torch::kInt64).contiguous();
  const std::int64_t n = idx.numel();
  auto out = torch::empty({n, cols}, torch::kFloat32);
  const auto row_bytes = quant::quant_row_bytes(type, static_cast<std::size_t>(cols));
  const bool grouped = quant::has_row_groups(type);
  const std::size_t G = quant::kRowGroup;
  std::vector<std::uint8_t> group(G * row_bytes);
  const std::uint8_t* base = values.data_ptr<std::uint8_t>();
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t r = idx.data_ptr<std::int64_t>()[i];
    FERRY_CHECK(r >= 0 && r < rows, "row ", r, " outside a weight of ", rows, " rows");
    const auto ur = static_cast<std::size_t>(r);
    const std::uint8_t* src = base + ur * row_bytes;
    if (grouped && (ur / G + 1) * G <= static_cast<std::size_t>(rows)) {  // its group of rows is interleaved
      std::memcpy(group.data(), base + ur / G * G * row_bytes, group.size());
      quant::from_row_groups(type, group.data(), G, static_cast<std::size_t>(cols));
      src = group.data() + ur % G * row_bytes;
    }
    quant::dequantize_row(type, src, out[i].data_ptr<float>(), static_cast<std::size_t>(cols));
  }
  return out;
}

Weight load_weight(const Checkpoint& ck, const std::string& name, std::int64_t rows, std::int64_t cols,
                   bool as_stored) {
  if (as_stored && ck.stored_blocks(name)) {
    const quant::QuantType type = *ck.stored_blocks(name);
    if (quant::quant_type_computed(type) && type != quant::QuantType::kF32 && type != quant::QuantType::kF16 &&
        type != quant::QuantType::kBF16) {
      ck.expect(name, {rows, cols});
      Weight w;
      w.type = type;
      w.rows = rows;
      w.cols = cols;
      w.values = torch::empty({static_cast<std::int64_t>(quant::quant_matrix_bytes(
                                  type, static_cast<std::size_t>(rows), static_cast<std::size_t>(cols)))},
                              torch::kUInt8);
      // NaN/Inf refused as for any tensor, from the blocks' scales (finite_blocks.h: the rule the
      // experts are checked by), without a float copy.
      ck.read_blocks(name, reinterpret_cast<std::byte*>(w.values.data_ptr<std::uint8_t>()));
      quant::to_row_groups(type, w.values.data_ptr<std::uint8_t>(), static_cast<std::size_t>(rows),
                           static_cast<std::size_t>(cols));
      return w;
    }
  }
  return load_tensor_f32(ck, name, {rows, cols});
}

torch::Tensor load_tensor_f32(const Checkpoint& ck, const std::string& name, const std::vector<std::int64_t>& shape) {
  ck.expect(name, shape);  // before allocating: a config's sizes are checked against the file's tensor first
  torch::Tensor t = torch::empty(shape, torch::kFloat32);
  ck.read_f32(name, shape, t.data_ptr<float>());
  return t;
}

namespace {

// MLA's attention weights of layer l: the q projection (or bottleneck), the latent's projection and
// norm, and kv_b_proj's key and value parts per head, from HF's kv_b_proj [heads * (nope + v),
// kv_lora] or from a GGUF file's attn_k_b [heads, kv_lora, nope] and attn_v_b [heads, v, kv_lora]
// (as 2-D weights of heads x their rows).
void load_mla_weights(const Checkpoint& ck, int l, LayerWeights& lw, bool as_stored) {
  const MoeConfig& c = ck.config();
  TensorNames n(c);
  const std::int64_t H = c.hidden_size, D = c.head_dim, nh = c.num_heads, R = c.rotary_dims(), nope = D - R;
  const std::int64_t L = c.kv_lora_rank, Q = c.q_lora_rank, V = c.v_head_dim;
  if (Q > 0) {
    lw.wq_a = load_weight(ck, n.mla(l, "q_a_proj"), Q, H, as_stored);
    lw.q_a_norm = load_tensor_f32(ck, n.mla(l, "q_a_layernorm"), {Q});
    lw.wq_b = load_weight(ck, n.mla(l, "q_b_proj"), nh * D, Q, as_stored);
  } else {
    lw.wq = load_weight(ck, n.mla(l, "q_proj"), nh * D, H, as_stored);
  }
  lw.wkv_a = load_weight(ck, n.mla(l, "kv_a_proj_with_mqa"), L + R, H, as_stored);
  lw.kv_a_norm = load_tensor_f32(ck, n.mla(l, "kv_a_layernorm"), {L});
  if (ck.contains(n.mla(l, "kv_b_proj"))) {
    auto kv_b = load_tensor_f32(ck, n.mla(l, "kv_b_proj"), mla_kv_b_shape(c)).view({nh, nope + V, L});
    lw.wk_b = kv_b.slice(1, 0, nope).transpose(1, 2).reshape({nh * L, nope});
    lw.wv_b = kv_b.slice(1, nope, nope + V).reshape({nh * V, L});
  } else {  // a GGUF file's attn_k_b, attn_v_b: computed on as stored
    lw.wk_b = load_weight(ck, n.mla(l, "k_b_proj"), nh * L, nope, as_stored);
    lw.wv_b = load_weight(ck, n.mla(l, "v_b_proj"), nh * V, L, as_stored);
  }
}

}  // namespace

DenseWeights load_dense_weights(const Checkpoint& ck, bool as_stored) {
  const MoeConfig& c = ck.config();
  TensorNames n(c);
  DenseWeights w;
  w.config = c;
  const std::int64_t H = c.hidden_size, V = c.vocab_size, D = c.head_dim;
  w.embed = load_weight(ck, n.embed(), V, H, as_stored);
  w.final_norm = load_tensor_f32(ck, n.final_norm(), {H});
  // As HF resolves them: tied embeddings are the head, even when the file also stores one.
  if (c.tie_word_embeddings)
    w.lm_head = w.embed;
  else
    w.lm_head = load_weight(ck, n.lm_head(), V, H, as_stored);
  for (int l = 0; l < c.num_layers; ++l) {
    LayerWeights lw;
    lw.attn_norm = load_tensor_f32(ck, n.attn_norm(l), {H});
    lw.ffn_norm = load_tensor_f32(ck, n.ffn_norm(l), {H});
    if (c.mla()) {
      load_mla_weights(ck, l, lw, as_stored);
    } else {
      lw.wq = load_weight(ck, n.attn(l, 'q'), c.num_heads * D, H, as_stored);
      lw.wk = load_weight(ck, n.attn(l, 'k'), c.num_kv_heads * D, H, as_stored);
      lw.wv = load_weight(ck, n.attn(l, 'v'), c.num_kv_heads * D, H, as_stored);
    }
    lw.wo = load_weight(ck, n.attn(l, 'o'), H, std::int64_t{c.num_heads} * c.attn_value_width(), as_stored);
    // Mixtral's attention has no biases, and HF ignores any stored; the other families' as
    // their config says (qkv_bias, o_bias), required then.
    if (c.qkv_bias) {
      lw.bq = load_tensor_f32(ck, n.attn(l, 'q', "bias"), {c.num_heads * D});
      lw.bk = load_tensor_f32(ck, n.attn(l, 'k', "bias"), {c.num_kv_heads * D});
      lw.bv = load_tensor_f32(ck, n.attn(l, 'v', "bias"), {c.num_kv_heads * D});
    }
    if (c.o_bias) lw.bo = load_tensor_f32(ck, n.attn(l, 'o', "bias"), {H});
    if (c.attn_sinks) lw.sinks = load_tensor_f32(ck, n.attn_sinks(l), {c.num_heads});
    if (!c.qk_norm.empty()) {
      const bool head = c.qk_norm == "head";
      lw.q_norm = load_tensor_f32(ck, n.qk_norm(l, 'q'), {head ? D : c.num_heads * D});
      lw.k_norm = load_tensor_f32(ck, n.qk_norm(l, 'k'), {head ? D : c.num_kv_heads * D});
    }
    if (c.moe_layer(l) < 0) {
      const std::int64_t F = c.dense_intermediate_size;
      lw.dw1 = load_weight(ck, n.dense_mlp(l, 1), F, H, as_stored);
      lw.dw3 = load_weight(ck, n.dense_mlp(l, 3), F, H, as_stored);
      lw.dw2 = load_weight(ck, n.dense_mlp(l, 2), H, F, as_stored);
      w.layers.push_back(std::move(lw));
      continue;
    }
    lw.router = load_tensor_f32(ck, n.router(l), {c.num_experts, H});
    if (c.router_bias) lw.router_bias = load_tensor_f32(ck, n.router_bias(l), {c.num_experts});
    if (c.router_logit_bias) lw.router_logit_bias = load_tensor_f32(ck, n.router(l, "bias"), {c.num_experts});
    if (c.expert_bias) {
      const std::int64_t E = c.num_experts, I = c.intermediate_size;
      lw.expert_b1 = load_tensor_f32(ck, n.expert_bias(l, 1), {E, I});
      lw.expert_b3 = load_tensor_f32(ck, n.expert_bias(l, 3), {E, I});
      lw.expert_b2 = load_tensor_f32(ck, n.expert_bias(l, 2), {E, H});
    }
    if (c.shared_expert_intermediate_size > 0) {
      const std::int64_t S = c.shared_expert_intermediate_size;
      lw.sw1 = load_weight(ck, n.shared_expert(l, 1), S, H, as_stored);
      lw.sw3 = load_weight(ck, n.shared_expert(l, 3), S, H, as_stored);
      lw.sw2 = load_weight(ck, n.shared_expert(l, 2), H, S, as_stored);
      if (c.shared_expert_gate) lw.sgate = load_tensor_f32(ck, n.shared_expert_gate(l), {1, H});
    }
    w.layers.push_back(std::move(lw));
  }
  return w;
}

ExpertWeights load_expert_weights(const Checkpoint& ck, int moe_layer, int expert) {
  const MoeConfig& c = ck.config();
  TensorNames n(c);
  const int layer = c.decoder_layer(moe_layer);
  const std::int64_t H = c.hidden_size, I = c.intermediate_size;
  return {load_tensor_f32(ck, n.expert(layer, expert, 1), {I, H}), load_tensor_f32(ck, n.expert(layer, expert, 3), {I, H}),
          load_tensor_f32(ck, n.expert(layer, expert, 2), {H, I})};
}

}  // namespace ferry::moe
