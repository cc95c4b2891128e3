// GLM-4.5, GLM-4.6 and GLM-4.5-Air (HF transformers' Glm4MoeConfig and modeling_glm4_moe.py):
// n_routed_experts of moe_intermediate_size chosen by sigmoid scores plus a selection-only bias
// (e_score_correction_bias), in the topk_group best of n_group groups, weights renormalised
// (norm_topk_prob) and scaled by routed_scaling_factor; n_shared_experts ungated shared experts as
// one MLP; dense layers before first_k_dense_replace; q/k/v biases with attention_bias (o has
// none); an RMSNorm of each q/k head with use_qk_norm; the rotary embedding over the first
// partial_rotary_factor x head_dim dims of each head (rotate-half). The multi-token-prediction
// layers after the last (num_nextn_predict_layers) are not run: ferry computes the next token's
// logits only.
#include <cmath>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "moe/model/config_json.h"
#include "moe/model/family.h"
#include "moe/model/gguf_layout.h"

namespace ferry::moe {

ModelFamily glm4_moe_family() {
  ModelFamily f;
  f.name = "glm4_moe";
  f.summary = "GLM-4.5 / GLM-4.6 / GLM-4.5-Air (Glm4MoeForCausalLM)";
  f.hf_architecture = "Glm4MoeForCausalLM";
  f.defaults = {.rms_norm_eps = 1e-5, .rope_theta = 1e4, .max_position_embeddings = 131072, .norm_topk_prob = true};
  f.config_keys = {"head_dim",          "partial_rotary_factor", "attention_bias",       "use_qk_norm",
                   "moe_intermediate_size", "n_routed_experts",  "n_shared_experts",     "routed_scaling_factor",
                   "n_group",           "topk_group",            "first_k_dense_replace", "num_nextn_predict_layers"};
  f.tensors.shared_expert = "shared_experts.";
  f.chat_template = "chatglm4";
  f.has_shared_expert = true;
  f.has_dense_layers = true;
  f.has_partial_rotary = true;
  f.has_expert_groups = true;
  f.read = [](const nlohmann::json& j, MoeConfig& c, const std::string& origin) {
    c.intermediate_size = config_get_or<int>(j, "moe_intermediate_size", 1408, origin);
    c.dense_intermediate_size = config_get_or<int>(j, "intermediate_size", 10944, origin);
    c.num_experts = config_require_int(j, "n_routed_experts", origin);
    const int shared = config_get_or<int>(j, "n_shared_experts", 1, origin);
    if (shared < 0) config_refuse(j, "n_shared_experts", "must be at least 0", origin);
    c.shared_expert_intermediate_size = shared * c.intermediate_size;  // one MLP of that width
    const int first_dense = config_get_or<int>(j, "first_k_dense_replace", 1, origin);
    if (first_dense < 0 || first_dense >= c.num_layers)
      config_refuse(j, "first_k_dense_replace", "must be in 0..num_hidden_layers - 1", origin);
    c.dense_layers.clear();
    for (int l = 0; l < first_dense; ++l) c.dense_layers.push_back(l);
    c.qkv_bias = config_get_or<bool>(j, "attention_bias", false, origin);
    c.o_bias = false;
    c.qk_norm = config_get_or<bool>(j, "use_qk_norm", false, origin) ? "head" : "";
    const double partial = config_get_or<double>(j, "partial_rotary_factor", 0.5, origin);
    const double rotary = partial * c.head_dim;
    if (!(partial > 0 && partial <= 1) || rotary != std::floor(rotary) || static_cast<int>(rotary) % 2 != 0)
      config_refuse(j, "partial_rotary_factor", "must be in (0, 1] and rotate an even number of each head's dims",
                    origin);
    c.rotary_dim = static_cast<int>(rotary);
    c.scoring_func = "sigmoid";
    c.router_bias = true;
    c.n_group = config_get_or<int>(j, "n_group", 1, origin);
    c.topk_group = config_get_or<int>(j, "topk_group", 1, origin);
    c.routed_scaling_factor = config_get_or<double>(j, "routed_scaling_factor", 1.0, origin);
    c.nextn_layers = config_get_or<int>(j, "num_nextn_predict_layers", 0, origin);
  };
  f.write = [](const MoeConfig& c, nlohmann::json& j) {
    j["norm_topk_prob"] = c.norm_topk_prob;
    j["n_routed_experts"] = c.num_experts;
    j["moe_intermediate_size"] = c.intermediate_size;
    j["intermediate_size"] = c.dense_layers.empty() ? c.intermediate_size : c.dense_intermediate_size;
    for (std::size_t k = 0; k < c.dense_layers.size(); ++k)
      FERRY_REQUIRE(c.dense_layers[k] == static_cast<int>(k), "GLM-4.5's dense layers are the first ones");
    j["first_k_dense_replace"] = c.dense_layers.size();
    FERRY_REQUIRE(c.shared_expert_intermediate_size % c.intermediate_size == 0,
                  "GLM-4.5's shared experts are n_shared_experts x moe_intermediate_size wide");
    j["n_shared_experts"] = c.shared_expert_intermediate_size / c.intermediate_size;
    j["attention_bias"] = c.qkv_bias;
    j["use_qk_norm"] = c.qk_norm == "head";
    j["partial_rotary_factor"] = static_cast<double>(c.rotary_dims()) / c.head_dim;
    j["n_group"] = c.n_group;
    j["topk_group"] = c.topk_group;
    j["routed_scaling_factor"] = c.routed_scaling_factor;
    if (c.nextn_layers > 0) j["num_nextn_predict_layers"] = c.nextn_layers;
  };
  f.check_tiny = [](MoeConfig& c) {
    FERRY_REQUIRE(c.rotary_dim != 0 || c.head_dim % 4 == 0,
                  "--head-dim: GLM-4.5 rotates half of each head, an even number of dims (or give --rope-dim)");
    // As the released models: q/k/v biases, half-rotary heads, sigmoid scores with a bias, the
    // weights renormalised and scaled by 2.5; unless given, two groups of experts (GLM-4.5 has
    // one) so that a tiny model exercises the group choice llama.cpp implements, where top_k fits
    // in one group.
    c.qkv_bias = true;
    if (c.rotary_dim == 0) c.rotary_dim = c.head_dim / 2;
    c.scoring_func = "sigmoid";
    c.router_bias = true;
    c.routed_scaling_factor = 2.5;
    if (c.shared_expert_intermediate_size == 0) c.shared_expert_intermediate_size = c.intermediate_size;  // n_shared_experts 1
    if (c.n_group == 0 && c.num_experts % 4 == 0 && c.top_k <= c.num_experts / 2) c.n_group = 2;
  };
  // GGUF (the converter's Glm4MoeModel, without its MTP layers): rotate-half over the rotary
  // dims (llama.cpp's NEOX rope, so q/k rows are not permuted), post_attention_layernorm as
  // blk.N.post_attention_norm, the router bias as blk.N.exp_probs_b.bias.
  f.gguf_architecture = "glm4moe";
  f.gguf_ffn_norm = "post_attention_norm";
  f.gguf_tokenizer_pre = "glm4";
  f.gguf_metadata = [](const MoeConfig& c, const nlohmann::json& j, GgufKeys& k) {
    k.set_u32(k.arch("expert_count"), c.num_experts);
    gguf_set_expert_groups(c, j, k);
    k.set_u32(k.arch("rope.dimension_count"), c.rotary_dims());
    k.set_u32(k.arch("expert_feed_forward_length"), c.intermediate_size);
    k.set_u32(k.arch("expert_shared_count"), c.shared_expert_intermediate_size / c.intermediate_size);
    k.set_u32(k.arch("leading_dense_block_count"), static_cast<std::int64_t>(c.dense_layers.size()));
    k.set_u32(k.arch("expert_gating_func"), kGgufGatingSigmoid);
    if (config_has(j, "routed_scaling_factor")) k.set_f32(k.arch("expert_weights_scale"), c.routed_scaling_factor);
    if (config_has(j, "norm_topk_prob")) k.set_bool(k.arch("expert_weights_norm"), c.norm_topk_prob);
  };
  f.gguf_read_metadata = [](GgufArchReader& r, nlohmann::json& j) {
    r.take_nextn_layers(j);
    r.take_int("expert_count", j, "n_routed_experts", /*required=*/true);
    r.take_expert_groups(j);
    // The converter always writes the rotary dims; without them llama.cpp would rotate whole heads
    // and HF half of each (partial_rotary_factor's default): refused rather than guessed.
    const int head_dim = gguf_hf_head_dim(j);
    const quant::GgufValue* rot = r.take("rope.dimension_count");
    if (rot == nullptr || !rot->is_integer() || rot->i <= 0 || rot->i > head_dim || rot->i % 2 != 0)
      r.refuse("rope.dimension_count", "must be even and in 2..head_dim (" + std::to_string(head_dim) + ")");
    j["partial_rotary_factor"] = static_cast<double>(rot->i) / head_dim;
    r.take_int("expert_feed_forward_length", j, "moe_intermediate_size", /*required=*/true);
    r.take_int("expert_shared_count", j, "n_shared_experts", /*required=*/true);  // llama.cpp requires it
    r.take_leading_dense(j);
    if (const quant::GgufValue* g = r.take("expert_gating_func"))
      if (!g->is_integer() || g->i != kGgufGatingSigmoid)
        r.refuse("expert_gating_func", "GLM-4.5 scores experts by sigmoid (2); softmax is " + std::to_string(kGgufGatingSoftmax));
    r.take_number("expert_weights_scale", j, "routed_scaling_factor");
    r.take_bool("expert_weights_norm", j, "norm_topk_prob", false);  // llama.cpp renormalises only when the key says so
    // llama.cpp's glm4moe reads the q/k/v biases and the q/k norms when the file has them.
    j["attention_bias"] = r.has_tensor("blk.0.attn_q.bias");
    j["use_qk_norm"] = r.has_tensor("blk.0.attn_q_norm.weight");
  };
  f.gguf_check = [](const MoeConfig& c) {
    gguf_refuse_rope_scaling(c, false);
    FERRY_REQUIRE(c.shared_expert_intermediate_size > 0, "config n_shared_experts: llama.cpp's glm4moe needs a shared expert");
    return std::vector<std::string>{};
  };
  return f;
}

}  // namespace ferry::moe
