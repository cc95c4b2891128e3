// DeepSeek-V2, -V2-Lite, -V3, -R1 and Kimi-K2 (HF's DeepseekV2/V3Config and modeling_deepseek.py
// of deepseek-ai; Kimi-K2 ships V3's modeling code under model_type kimi_k2): multi-head latent
// attention (moe/model/mla.h) with an optional q bottleneck (q_lora_rank; V2-Lite has none);
// n_routed_experts fine-grained experts chosen by softmax (V2) or sigmoid (V3) scores, by
// topk_method: greedy (plain top-k), group_limited_greedy (V2: within the topk_group of n_group
// groups with the best single score), noaux_tc (V3: a selection-only bias, groups by their two best
// biased scores); top-k weights renormalised when norm_topk_prob and top_k > 1, and times
// routed_scaling_factor (V2 scales only weights it did not renormalise); n_shared_experts ungated
// shared experts; dense layers before first_k_dense_replace and between every moe_layer_freq-th;
// the num_nextn_predict_layers multi-token-prediction layers are not run. The defaults differ
// between DeepseekV2Config and DeepseekV3Config: config.json's model_type picks them.
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "moe/model/config_json.h"
#include "moe/model/family.h"
#include "moe/model/gguf_layout.h"

namespace ferry::moe {

// family_deepseek.cc
std::vector<int> deepseek_dense_layers(const nlohmann::json& j, int num_layers, const std::string& origin,
                                       int default_first);
// n_routed_experts, the expert and dense widths, the dense layers and n_shared_experts.
void deepseek_write_experts(const MoeConfig& c, nlohmann::json& j);

namespace {

void read_deepseek_v3(const nlohmann::json& j, MoeConfig& c, const std::string& origin) {
  const bool v2 = config_get_or<std::string>(j, "model_type", "deepseek_v3", origin) == "deepseek_v2";
  if (config_get_or<bool>(j, "attention_bias", false, origin))
    config_refuse(j, "attention_bias", "DeepSeek's MLA projections have no biases", origin);
  if (v2 && !config_has(j, "max_position_embeddings")) c.max_position_embeddings = 2048;
  c.intermediate_size = config_get_or<int>(j, "moe_intermediate_size", v2 ? 1407 : 2048, origin);
  c.dense_intermediate_size = config_get_or<int>(j, "intermediate_size", v2 ? 11008 : 18432, origin);
  c.num_experts = config_require_int(j, "n_routed_experts", origin);
  const int shared = config_get_or<int>(j, "n_shared_experts", v2 ? 0 : 1, origin);
  if (shared < 0) config_refuse(j, "n_shared_experts", "must be at least 0", origin);
  c.shared_expert_intermediate_size = shared * c.intermediate_size;  // one MLP of that width
  c.shared_expert_gate = false;
  c.dense_layers = deepseek_dense_layers(j, c.num_layers, origin, v2 ? 0 : 3);
  // Multi-head latent attention.
  c.kv_lora_rank = config_require_int(j, "kv_lora_rank", origin);
  c.q_lora_rank = config_get_or<int>(j, "q_lora_rank", 0, origin);  // null (V2-Lite) = none
  const int rope = config_get_or<int>(j, "qk_rope_head_dim", 64, origin);
  const int nope = config_get_or<int>(j, "qk_nope_head_dim", 128, origin);
  c.v_head_dim = config_get_or<int>(j, "v_head_dim", 128, origin);
  if (c.kv_lora_rank <= 0) config_refuse(j, "kv_lora_rank", "must be at least 1", origin);
  if (c.q_lora_rank < 0) config_refuse(j, "q_lora_rank", "must be at least 0 (or null)", origin);
  if (rope <= 0 || rope % 2 != 0) config_refuse(j, "qk_rope_head_dim", "must be even and at least 2", origin);
  if (nope <= 0) config_refuse(j, "qk_nope_head_dim", "must be at least 1", origin);
  c.head_dim = nope + rope;
  c.rotary_dim = rope;
  c.num_kv_heads = c.num_heads;  // num_key_value_heads is not used by MLA
  // Routing.
  c.scoring_func = config_get_or<std::string>(j, "scoring_func", v2 ? "softmax" : "sigmoid", origin);
  if (c.scoring_func != "softmax" && c.scoring_func != "sigmoid")
    config_refuse(j, "scoring_func", "implemented: softmax, sigmoid", origin);
  const std::string method = config_get_or<std::string>(j, "topk_method", v2 ? "greedy" : "noaux_tc", origin);
  if (method != "greedy" && method != "group_limited_greedy" && method != "noaux_tc")
    config_refuse(j, "topk_method", "implemented: greedy, group_limited_greedy, noaux_tc", origin);
  if (method != "greedy") {
    c.n_group = config_get_or<int>(j, "n_group", v2 ? 1 : 8, origin);
    c.topk_group = config_get_or<int>(j, "topk_group", v2 ? 1 : 4, origin);
  }
  c.group_by_max = method == "group_limited_greedy";
  c.router_bias = method == "noaux_tc";
  if (v2 && !config_has(j, "norm_topk_prob")) c.norm_topk_prob = false;  // DeepseekV2Config's default
  c.norm_topk_prob = c.norm_topk_prob && c.top_k > 1;
  c.routed_scaling_factor = config_get_or<double>(j, "routed_scaling_factor", v2 ? 1.0 : 2.5, origin);
  if (v2 && c.norm_topk_prob) c.routed_scaling_factor = 1.0;  // V2 scales only the weights it keeps as they are
  c.nextn_layers = config_get_or<int>(j, "num_nextn_predict_layers", 0, origin);
}

void write_deepseek_v3(const MoeConfig& c, nlohmann::json& j) {
  j.erase("head_dim");  // the heads' widths are qk_nope_head_dim + qk_rope_head_dim and v_head_dim
  deepseek_write_experts(c, j);
  j["kv_lora_rank"] = c.kv_lora_rank;
  j["q_lora_rank"] = c.q_lora_rank > 0 ? nlohmann::json(c.q_lora_rank) : nlohmann::json();
  j["qk_rope_head_dim"] = c.rotary_dims();
  j["qk_nope_head_dim"] = c.head_dim - c.rotary_dims();
  j["v_head_dim"] = c.v_head_dim;
  j["scoring_func"] = c.scoring_func;
  FERRY_REQUIRE(c.router_bias || c.n_group == 1 || c.group_by_max,
                "DeepSeek scores groups by their two best scores only with a router bias (noaux_tc)");
  j["topk_method"] = c.router_bias ? "noaux_tc" : c.n_group > 1 ? "group_limited_greedy" : "greedy";
  j["n_group"] = c.n_group;
  j["topk_group"] = c.topk_group;
  j["norm_topk_prob"] = c.norm_topk_prob;
  j["routed_scaling_factor"] = c.routed_scaling_factor;
  j["num_nextn_predict_layers"] = c.nextn_layers;
  j["attention_bias"] = false;
}

}  // namespace

ModelFamily deepseek_v3_family() {
  ModelFamily f;
  f.name = "deepseek_v3";
  f.summary = "DeepSeek-V2/V2-Lite/V3/R1, Kimi-K2 (DeepseekV2/V3ForCausalLM): multi-head latent attention";
  // Kimi-K2 is served with its own template, and its tokenizer (tiktoken's, converted) carries its own regex.
  f.aliases = {{"deepseek_v2"}, {"kimi_k2", "kimi-k2", "kimi-k2"}};
  f.hf_architecture = "DeepseekV3ForCausalLM";
  f.defaults = {.rms_norm_eps = 1e-6, .rope_theta = 1e4, .max_position_embeddings = 4096, .norm_topk_prob = true};
  f.config_keys = {"n_routed_experts", "n_shared_experts",  "moe_intermediate_size", "first_k_dense_replace",
                   "moe_layer_freq",   "scoring_func",      "topk_method",           "n_group",
                   "topk_group",       "routed_scaling_factor", "kv_lora_rank",      "q_lora_rank",
                   "qk_rope_head_dim", "qk_nope_head_dim",  "v_head_dim",            "num_nextn_predict_layers",
                   "attention_bias",   "ep_size",           "aux_loss_alpha",        "seq_aux",
                   "pretraining_tp"};
  f.tensors.shared_expert = "shared_experts.";
  f.chat_template = "deepseek3";
  f.has_shared_expert = true;
  f.has_dense_layers = true;
  f.has_mla = true;
  f.has_partial_rotary = true;
  f.has_expert_groups = true;
  f.read = read_deepseek_v3;
  f.write = write_deepseek_v3;
  f.check_tiny = [](MoeConfig& c) {
    FERRY_REQUIRE(c.rotary_dim != 0 || c.head_dim % 4 == 0,
                  "--head-dim: DeepSeek's tiny heads are half rotary, an even number of dims (or give --rope-dim)");
    FERRY_REQUIRE(c.q_lora_rank >= 0 && c.kv_lora_rank >= 0, "--q-lora-rank and --kv-lora-rank must be at least 0");
    // As V3: MLA (the latent half the width unless given), heads half rotary and values as wide as
    // the q/k heads unless given (V3: --head-dim 192 --rope-dim 64 --v-head-dim 128); sigmoid
    // scores with a bias, weights scaled by 2.5; unless given, two groups of experts where top_k
    // fits in one (V3: --expert-groups 8 --groups-used 4).
    if (c.kv_lora_rank == 0) c.kv_lora_rank = c.hidden_size / 2;
    if (c.rotary_dim == 0) c.rotary_dim = c.head_dim / 2;
    if (c.v_head_dim == 0) c.v_head_dim = c.head_dim;
    c.num_kv_heads = c.num_heads;
    c.scoring_func = "sigmoid";
    c.router_bias = true;
    c.routed_scaling_factor = 2.5;
    if (c.n_group == 0 && c.num_experts % 4 == 0 && c.top_k <= c.num_experts / 2) c.n_group = 2;
    if (c.shared_expert_intermediate_size == 0) c.shared_expert_intermediate_size = c.intermediate_size;
  };
  // GGUF (the converter's DeepseekV2Model, architecture deepseek2, without MTP layers): one KV
  // head of the latent's width (attention.key_length kv_lora + rope, value_length kv_lora), the
  // heads' widths in key_length_mla / value_length_mla, kv_b_proj split per head into attn_k_b
  // (transposed) and attn_v_b, llama.cpp's normal (pairwise) rope, so q/k rows are not permuted.
  // attention.q_lora_rank is written as 0 for a model without the q bottleneck: the converter
  // omits it, and llama.cpp then takes the model for V2-Lite only by its depth (26 or 27 layers).
  f.gguf_architecture = "deepseek2";
  f.gguf_tokenizer_pre = "deepseek-v3";
  f.gguf_metadata = [](const MoeConfig& c, const nlohmann::json& j, GgufKeys& k) {
    k.set_u32(k.arch("attention.head_count_kv"), 1);
    gguf_set_expert_groups(c, j, k);
    k.set_u32(k.arch("expert_gating_func"), c.scoring_func == "sigmoid" ? kGgufGatingSigmoid : kGgufGatingSoftmax);
    k.set_u32(k.arch("leading_dense_block_count"), static_cast<std::int64_t>(c.dense_layers.size()));
    k.set_u32(k.arch("vocab_size"), c.vocab_size);
    k.set_u32(k.arch("attention.q_lora_rank"), c.q_lora_rank);
    k.set_u32(k.arch("attention.kv_lora_rank"), c.kv_lora_rank);
    k.set_u32(k.arch("attention.key_length"), c.kv_lora_rank + c.rotary_dims());
    k.set_u32(k.arch("attention.value_length"), c.kv_lora_rank);
    k.set_u32(k.arch("attention.key_length_mla"), c.head_dim);
    k.set_u32(k.arch("attention.value_length_mla"), c.v_head_dim);
    k.set_u32(k.arch("expert_feed_forward_length"), c.intermediate_size);
    k.set_u32(k.arch("expert_count"), c.num_experts);
    k.set_u32(k.arch("expert_shared_count"), c.shared_expert_intermediate_size / c.intermediate_size);
    k.set_f32(k.arch("expert_weights_scale"), c.routed_scaling_factor);
    if (c.norm_topk_prob) k.set_bool(k.arch("expert_weights_norm"), true);
    k.set_u32(k.arch("rope.dimension_count"), c.rotary_dims());
    gguf_set_yarn(c, k);
    if (c.rope_scaling.type == "yarn")  // the converter's 0.1 x
      k.set_f32(k.arch("rope.scaling.yarn_log_multiplier"), 0.1 * c.rope_scaling.mscale_all_dim);
  };
  f.gguf_read_metadata = [](GgufArchReader& r, nlohmann::json& j) {
    // Absent keys take llama.cpp's defaults where DeepseekV3Config's differ: no dense lead (here), no
    // groups (take_expert_groups below).
    r.take_nextn_layers(j);
    r.take_leading_dense(j);
    j["moe_layer_freq"] = 1;
    r.take_equal("vocab_size", j["vocab_size"].get<std::int64_t>(), "the rows of token_embd");
    r.take_int("attention.q_lora_rank", j, "q_lora_rank");
    r.take_int("attention.kv_lora_rank", j, "kv_lora_rank", /*required=*/true);
    const quant::GgufValue* k_mla = r.take("attention.key_length_mla");
    const quant::GgufValue* v_mla = r.take("attention.value_length_mla");
    for (const auto& [key, v] : {std::pair{"attention.key_length_mla", k_mla}, std::pair{"attention.value_length_mla", v_mla}})
      if (v == nullptr || !v->is_integer() || v->i <= 0)
        r.refuse(key, "a file without the MLA head sizes (an older conversion with attn_kv_b) is not read: convert it again");
    const quant::GgufValue* rope = r.take("rope.dimension_count");
    if (rope == nullptr || !rope->is_integer() || rope->i <= 0 || rope->i >= k_mla->i)
      r.refuse("rope.dimension_count", "must be at least 1 and less than attention.key_length_mla");
    j["qk_rope_head_dim"] = rope->i;
    j["qk_nope_head_dim"] = k_mla->i - rope->i;
    j["v_head_dim"] = v_mla->i;
    const std::int64_t kv_lora = j["kv_lora_rank"].get<std::int64_t>();
    r.take_equal("attention.key_length", kv_lora + rope->i, "the latent and the rotary key (kv_lora_rank + rope)");
    r.take_equal("attention.value_length", kv_lora, "the latent (kv_lora_rank)");
    j["num_key_value_heads"] = j["num_attention_heads"];  // the file's 1: the latent's single head
    r.take_int("expert_feed_forward_length", j, "moe_intermediate_size", /*required=*/true);
    r.take_int("expert_count", j, "n_routed_experts", /*required=*/true);
    r.take_int("expert_shared_count", j, "n_shared_experts", /*required=*/true);  // llama.cpp requires it
    j["routed_scaling_factor"] = 1.0;  // llama.cpp scales only when the key is there
    r.take_number("expert_weights_scale", j, "routed_scaling_factor");
    r.take_bool("expert_weights_norm", j, "norm_topk_prob", false);
    const quant::GgufValue* gating = r.take("expert_gating_func");
    if (gating != nullptr && (!gating->is_integer() || (gating->i != kGgufGatingSoftmax && gating->i != kGgufGatingSigmoid)))
      r.refuse("expert_gating_func", "implemented: softmax (1), sigmoid (2)");
    j["scoring_func"] = gating != nullptr && gating->i == kGgufGatingSigmoid ? "sigmoid" : "softmax";  // absent: softmax
    r.take_expert_groups(j);
    const std::int64_t first_moe = j["first_k_dense_replace"].get<std::int64_t>();
    const bool bias = r.has_tensor("blk." + std::to_string(first_moe) + ".exp_probs_b.bias");
    if (!bias && j.value("n_group", 1) > 1)
      r.refuse("expert_group_count", "llama.cpp scores groups by their two best scores and DeepSeek-V2 by the best; "
                                     "a file without the router bias leaves which one open");
    j["topk_method"] = bias ? "noaux_tc" : j.value("n_group", 1) > 1 ? "group_limited_greedy" : "greedy";
    const std::string scaling = r.take_string("rope.scaling.type", "none");
    if (scaling == "yarn") {  // mscale and mscale_all_dim from the log multiplier (0.1 x mscale_all_dim)
      const quant::GgufValue* log_mul = r.take("rope.scaling.yarn_log_multiplier");
      if (log_mul == nullptr || !log_mul->is_number())
        r.refuse("rope.scaling.type", "yarn without rope.scaling.yarn_log_multiplier leaves DeepSeek's mscale open");
      const double mscale = (log_mul->is_integer() ? double(log_mul->i) : log_mul->f) / 0.1;
      nlohmann::json y = {{"type", "yarn"}, {"mscale", mscale}, {"mscale_all_dim", mscale}};
      r.take_yarn(y);
      j["rope_scaling"] = y;
    } else if (scaling != "none") {
      r.refuse("rope.scaling.type", "implemented: none, yarn");
    }
  };
  f.gguf_check = [](const MoeConfig& c) {
    const RopeScaling& s = c.rope_scaling;
    if (s.type != "yarn") gguf_refuse_rope_scaling(c, false);
    FERRY_REQUIRE(s.type != "yarn" || s.mscale == s.mscale_all_dim, "config rope_scaling mscale ", s.mscale,
                  " != mscale_all_dim ", s.mscale_all_dim, ": a GGUF file carries mscale_all_dim only");
    for (std::size_t k = 0; k < c.dense_layers.size(); ++k)
      FERRY_REQUIRE(c.dense_layers[k] == static_cast<int>(k), "config moe_layer_freq: llama.cpp's deepseek2 has dense "
                                                              "layers only before the first MoE layer");
    FERRY_REQUIRE(!c.group_by_max || c.n_group == 1, "config topk_method group_limited_greedy: llama.cpp's deepseek2 "
                                                     "scores groups by their two best scores, not the best one");
    return std::vector<std::string>{};
  };
  return f;
}

}  // namespace ferry::moe
