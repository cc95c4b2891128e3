// OLMoE (HF transformers' OlmoeConfig and modeling_olmoe.py): RMSNorm over the whole q and k
// projections, q/k/v clamped to clip_qkv, attention biases with attention_bias; no shared expert,
// no dense layers, no sliding window.
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "moe/model/config_json.h"
#include "moe/model/family.h"
#include "moe/model/gguf_layout.h"

namespace ferry::moe {

ModelFamily olmoe_family() {
  ModelFamily f;
  f.name = "olmoe";
  f.summary = "OLMoE (OlmoeForCausalLM)";
  f.hf_architecture = "OlmoeForCausalLM";
  f.defaults = {.rms_norm_eps = 1e-5, .rope_theta = 1e4, .max_position_embeddings = 4096, .norm_topk_prob = false};
  f.config_keys = {"num_experts", "head_dim", "attention_bias", "clip_qkv"};
  f.chat_template = "tulu";
  f.read = [](const nlohmann::json& j, MoeConfig& c, const std::string& origin) {
    c.intermediate_size = config_require_int(j, "intermediate_size", origin);
    c.num_experts = config_num_experts(j, origin);
    c.o_bias = config_get_or<bool>(j, "attention_bias", false, origin);
    c.qkv_bias = c.o_bias;
    c.qk_norm = "full";
    c.clip_qkv = config_get_or<double>(j, "clip_qkv", 0.0, origin);
    if (config_has(j, "clip_qkv") && !(c.clip_qkv > 0))
      FERRY_THROW(FormatError, "config '", origin, "': clip_qkv must be a number greater than 0 or null, got ",
                  j["clip_qkv"].dump());
  };
  f.write = [](const MoeConfig& c, nlohmann::json& j) {
    j["norm_topk_prob"] = c.norm_topk_prob;
    j["num_experts"] = c.num_experts;
    j["attention_bias"] = c.o_bias;
  };
  // GGUF (the converter's OlmoeModel): the RMSNorm epsilon written as 1e-5 whatever config.json
  // says, the expert count from num_experts.
  f.gguf_architecture = "olmoe";
  f.gguf_tokenizer_pre = "olmo";
  f.gguf_metadata = [](const MoeConfig&, const nlohmann::json& j, GgufKeys& k) {
    k.set_f32(k.arch("attention.layer_norm_rms_epsilon"), 1e-5);
    if (config_has(j, "num_experts")) k.set_u32(k.arch("expert_count"), j["num_experts"].get<std::int64_t>());
  };
  f.gguf_read_metadata = [](GgufArchReader& r, nlohmann::json& j) {
    r.take_int("expert_count", j, "num_experts", /*required=*/true);
    j["norm_topk_prob"] = false;  // llama.cpp's olmoe does not renormalise the top-k weights
  };
  f.gguf_check = [](const MoeConfig& c) {
    gguf_refuse_rope_scaling(c, false);
    FERRY_REQUIRE(!c.qkv_bias && !c.o_bias, "config attention_bias: llama.cpp's olmoe has no attention biases");
    FERRY_REQUIRE(c.num_kv_heads == c.num_heads && c.num_heads * c.head_dim == c.hidden_size,
                  "config num_key_value_heads: llama.cpp's olmoe normalises q and k over hidden_size, so it needs "
                  "num_key_value_heads = num_attention_heads and heads x head_dim = hidden_size");
    std::vector<std::string> notes;
    if (c.rms_norm_eps != 1e-5)
      notes.push_back("rms_norm_eps " + std::to_string(c.rms_norm_eps) + " is written as 1e-5, as the converter does");
    if (c.clip_qkv > 0) notes.push_back("clip_qkv is not written: llama.cpp's olmoe does not clamp q, k, v");
    if (c.norm_topk_prob) notes.push_back("norm_topk_prob true is not written: llama.cpp's olmoe does not renormalise");
    return notes;
  };
  return f;
}

}  // namespace ferry::moe
