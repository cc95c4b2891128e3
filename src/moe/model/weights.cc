#include "moe/model/weights.h"

#include <torch/types.h>
#include <torch/utils.h>

namespace ferry::moe {

torch::Tensor load_tensor_f32(const Checkpoint& ck, const std::string& name, const std::vector<std::int64_t>& shape) {
  ck.expect(name, shape);  // before allocating: a config's sizes are checked against the file's tensor first
  torch::Tensor t = torch::empty(shape, torch::kFloat32);
  ck.read_f32(name, shape, t.data_ptr<float>());
  return t;
}

DenseWeights load_dense_weights(const Checkpoint& ck) {
  const MoeConfig& c = ck.config();
  TensorNames n(c);
  DenseWeights w;
  w.config = c;
  const std::int64_t H = c.hidden_size, V = c.vocab_size, D = c.head_dim;
  w.embed = load_tensor_f32(ck, n.embed(), {V, H});
  w.final_norm = load_tensor_f32(ck, n.final_norm(), {H});
  // As HF resolves them: tied embeddings are the head, even when the file also stores one.
  if (c.tie_word_embeddings)
    w.lm_head = w.embed;
  else
    w.lm_head = load_tensor_f32(ck, n.lm_head(), {V, H});
  for (int l = 0; l < c.num_layers; ++l) {
    LayerWeights lw;
    lw.attn_norm = load_tensor_f32(ck, n.attn_norm(l), {H});
    lw.ffn_norm = load_tensor_f32(ck, n.ffn_norm(l), {H});
    lw.wq = load_tensor_f32(ck, n.attn(l, 'q'), {c.num_heads * D, H});
    lw.wk = load_tensor_f32(ck, n.attn(l, 'k'), {c.num_kv_heads * D, H});
    lw.wv = load_tensor_f32(ck, n.attn(l, 'v'), {c.num_kv_heads * D, H});
    lw.wo = load_tensor_f32(ck, n.attn(l, 'o'), {H, c.num_heads * D});
    // Mixtral's attention has no biases, and HF ignores any stored; the other families' as
    // their config says (qkv_bias, o_bias), required then.
    if (c.qkv_bias) {
      lw.bq = load_tensor_f32(ck, n.attn(l, 'q', "bias"), {c.num_heads * D});
      lw.bk = load_tensor_f32(ck, n.attn(l, 'k', "bias"), {c.num_kv_heads * D});
      lw.bv = load_tensor_f32(ck, n.attn(l, 'v', "bias"), {c.num_kv_heads * D});
    }
    if (c.o_bias) lw.bo = load_tensor_f32(ck, n.attn(l, 'o', "bias"), {H});
    if (!c.qk_norm.empty()) {
      const bool head = c.qk_norm == "head";
      lw.q_norm = load_tensor_f32(ck, n.qk_norm(l, 'q'), {head ? D : c.num_heads * D});
      lw.k_norm = load_tensor_f32(ck, n.qk_norm(l, 'k'), {head ? D : c.num_kv_heads * D});
    }
    if (c.moe_layer(l) < 0) {
      const std::int64_t F = c.dense_intermediate_size;
      lw.dw1 = load_tensor_f32(ck, n.dense_mlp(l, 1), {F, H});
      lw.dw3 = load_tensor_f32(ck, n.dense_mlp(l, 3), {F, H});
      lw.dw2 = load_tensor_f32(ck, n.dense_mlp(l, 2), {H, F});
      w.layers.push_back(std::move(lw));
      continue;
    }
    lw.router = load_tensor_f32(ck, n.router(l), {c.num_experts, H});
    if (c.shared_expert_intermediate_size > 0) {
      const std::int64_t S = c.shared_expert_intermediate_size;
      lw.sw1 = load_tensor_f32(ck, n.shared_expert(l, 1), {S, H});
      lw.sw3 = load_tensor_f32(ck, n.shared_expert(l, 3), {S, H});
      lw.sw2 = load_tensor_f32(ck, n.shared_expert(l, 2), {H, S});
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
