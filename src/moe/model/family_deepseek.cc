// DeepSeek-MoE V1 (deepseek-ai/deepseek-moe-16b's configuration_deepseek.py and
// modeling_deepseek.py): fine-grained experts of moe_intermediate_size, n_shared_experts ungated
// shared experts as one MLP, dense layers before first_k_dense_replace and between every
// moe_layer_freq-th, Llama's attention (biases with attention_bias, heads hidden_size / heads wide),
// top-k weights renormalised only when top_k > 1. pretraining_tp only splits the same matmuls;
// aux_loss_alpha and seq_aux are training-only.
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "moe/model/config_json.h"
#include "moe/model/family.h"
#include "moe/model/gguf_layout.h"

namespace ferry::moe {

// DeepseekDecoderLayer (V1, V2, V3): MoE iff layer >= first_k_dense_replace (default
// `default_first`) and layer % moe_layer_freq == 0.
std::vector<int> deepseek_dense_layers(const nlohmann::json& j, int num_layers, const std::string& origin,
                                       int default_first) {
  const int first = config_get_or<int>(j, "first_k_dense_replace", default_first, origin);
  const int freq = config_get_or<int>(j, "moe_layer_freq", 1, origin);
  if (first < 0 || freq < 1)
    FERRY_THROW(FormatError, "config '", origin, "': first_k_dense_replace must be at least 0 and moe_layer_freq at least 1");
  std::vector<int> dense;
  for (int l = 0; l < num_layers; ++l)
    if (!(l >= first && l % freq == 0)) dense.push_back(l);
  return dense;
}

namespace {

// The inverse for write(): first_k_dense_replace and moe_layer_freq of `c`'s dense layers.
void deepseek_write_dense_layers(const MoeConfig& c, nlohmann::json& j) {
  // MoE layers are those l >= first_k_dense_replace with l % moe_layer_freq == 0: the first MoE
  // layer and the distance to the next one give both (one MoE layer m: m, or the whole stack).
  std::vector<int> moe;
  for (int l = 0; l < c.num_layers && moe.size() < 2; ++l)
    if (c.moe_layer(l) >= 0) moe.push_back(l);
  const int first = moe.at(0);
  const int freq = moe.size() > 1 ? moe[1] - moe[0] : (first == 0 ? c.num_layers : first);
  j["first_k_dense_replace"] = first;
  j["moe_layer_freq"] = freq;
  FERRY_REQUIRE(deepseek_dense_layers(j, c.num_layers, "written", 0) == c.dense_layers,
                "DeepSeek's dense layers are the first ones and those between every moe_layer_freq-th: "
                "these cannot be written as first_k_dense_replace and moe_layer_freq");
}

}  // namespace

void deepseek_write_experts(const MoeConfig& c, nlohmann::json& j) {
  j["n_routed_experts"] = c.num_experts;
  j["moe_intermediate_size"] = c.intermediate_size;
  j["intermediate_size"] = c.dense_layers.empty() ? c.intermediate_size : c.dense_intermediate_size;
  deepseek_write_dense_layers(c, j);
  FERRY_REQUIRE(c.shared_expert_intermediate_size % c.intermediate_size == 0,
                "DeepSeek's shared experts are n_shared_experts x moe_intermediate_size wide");
  j["n_shared_experts"] = c.shared_expert_intermediate_size / c.intermediate_size;
}

ModelFamily deepseek_family() {
  ModelFamily f;
  f.name = "deepseek";
  f.summary = "DeepSeek-MoE V1, deepseek-moe-16b (DeepseekForCausalLM)";
  f.hf_architecture = "DeepseekForCausalLM";
  // The V1 checkpoint's configuration.
  f.defaults = {.rms_norm_eps = 1e-6, .rope_theta = 1e4, .max_position_embeddings = 2048, .norm_topk_prob = false};
  f.config_keys = {"n_routed_experts", "n_shared_experts", "moe_intermediate_size", "first_k_dense_replace",
                   "moe_layer_freq",   "scoring_func",     "attention_bias",        "pretraining_tp",
                   "aux_loss_alpha",   "seq_aux"};
  f.tensors.shared_expert = "shared_experts.";
  f.chat_template = "deepseek";
  f.has_shared_expert = true;
  f.has_dense_layers = true;
  f.read = [](const nlohmann::json& j, MoeConfig& c, const std::string& origin) {
    if (config_has(j, "scoring_func") && j["scoring_func"] != "softmax")
      config_refuse(j, "scoring_func", "implemented: softmax", origin);
    c.intermediate_size = config_get_or<int>(j, "moe_intermediate_size", 1407, origin);
    c.dense_intermediate_size = config_get_or<int>(j, "intermediate_size", 11008, origin);
    c.num_experts = config_require_int(j, "n_routed_experts", origin);
    if (c.top_k == 1) c.norm_topk_prob = false;  // the gate renormalises only when top_k > 1
    const int shared = config_get_or<int>(j, "n_shared_experts", 0, origin);
    if (shared < 0) FERRY_THROW(FormatError, "config '", origin, "': n_shared_experts must be at least 0, got ", shared);
    c.shared_expert_intermediate_size = shared * c.intermediate_size;  // DeepseekMoE: one MLP of that width
    c.shared_expert_gate = false;
    c.dense_layers = deepseek_dense_layers(j, c.num_layers, origin, 0);
    c.o_bias = config_get_or<bool>(j, "attention_bias", false, origin);
    c.qkv_bias = c.o_bias;
  };
  f.write = [](const MoeConfig& c, nlohmann::json& j) {
    j.erase("head_dim");  // V1 always uses hidden_size / heads
    j["norm_topk_prob"] = c.norm_topk_prob;
    deepseek_write_experts(c, j);
    j["scoring_func"] = "softmax";
    j["attention_bias"] = c.o_bias;
  };
  f.check_tiny = [](const MoeConfig& c) {
    FERRY_REQUIRE(c.head_dim * c.num_heads == c.hidden_size, "--head-dim: DeepSeek's heads are --hidden / --heads wide");
  };
  // GGUF (the converter's DeepseekModel): q/k rows permuted as Llama's, the leading dense layers,
  // expert widths, shared expert count and a weights scale of 1.
  f.gguf_architecture = "deepseek";
  f.gguf_permute_qk = true;
  f.gguf_tokenizer_pre = "deepseek-llm";
  f.gguf_metadata = [](const MoeConfig& c, const nlohmann::json&, GgufKeys& k) {
    k.set_u32(k.arch("rope.dimension_count"), c.head_dim);
    k.set_string(k.arch("rope.scaling.type"), "none");
    k.set_u32(k.arch("leading_dense_block_count"), static_cast<std::int64_t>(c.dense_layers.size()));
    k.set_u32(k.arch("vocab_size"), c.vocab_size);
    k.set_u32(k.arch("expert_feed_forward_length"), c.intermediate_size);
    k.set_f32(k.arch("expert_weights_scale"), 1.0);
    k.set_u32(k.arch("expert_count"), c.num_experts);
    k.set_u32(k.arch("expert_shared_count"), c.shared_expert_intermediate_size / c.intermediate_size);
  };
  f.gguf_read_metadata = [](GgufArchReader& r, nlohmann::json& j) {
    r.take_equal("rope.dimension_count", gguf_hf_head_dim(j), "rotary embedding of whole heads");
    if (r.take_string("rope.scaling.type", "none") != "none") r.refuse("rope.scaling.type", "implemented: none");
    r.take_leading_dense(j);
    r.take_equal("vocab_size", j["vocab_size"].get<std::int64_t>(), "the rows of token_embd");
    r.take_int("expert_feed_forward_length", j, "moe_intermediate_size");
    if (const quant::GgufValue* scale = r.take("expert_weights_scale"))
      if (!scale->is_number() || (scale->is_integer() ? double(scale->i) : scale->f) != 1.0)
        r.refuse("expert_weights_scale", "DeepSeek-MoE V1 scales the routed experts' weights by 1");
    r.take_int("expert_count", j, "n_routed_experts", /*required=*/true);
    r.take_int("expert_shared_count", j, "n_shared_experts");
    j["norm_topk_prob"] = false;  // llama.cpp's deepseek does not renormalise the top-k weights
  };
  f.gguf_check = [](const MoeConfig& c) {
    gguf_refuse_rope_scaling(c, false);
    for (std::size_t k = 0; k < c.dense_layers.size(); ++k)
      FERRY_REQUIRE(c.dense_layers[k] == static_cast<int>(k), "config moe_layer_freq: llama.cpp's deepseek has dense "
                                                              "layers only before the first MoE layer");
    FERRY_REQUIRE(c.shared_expert_intermediate_size > 0, "config n_shared_experts: llama.cpp's deepseek needs shared experts");
    FERRY_REQUIRE(!c.qkv_bias && !c.o_bias, "config attention_bias: llama.cpp's deepseek has no attention biases");
    std::vector<std::string> notes;
    if (c.norm_topk_prob) notes.push_back("norm_topk_prob true is not written: llama.cpp's deepseek does not renormalise");
    return notes;
  };
  return f;
}

}  // namespace ferry::moe
