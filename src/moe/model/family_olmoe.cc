// OLMoE (HF transformers' OlmoeConfig and modeling_olmoe.py): RMSNorm over the whole q and k
// projections, q/k/v clamped to clip_qkv, attention biases with attention_bias; no shared expert,
// no dense layers, no sliding window.
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "moe/model/config_json.h"
#include "moe/model/family.h"

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
      FERRY_THROW(FormatError, "config '", origin, "': clip_qkv must be a positive number or null, got ",
                  j["clip_qkv"].dump());
  };
  f.write = [](const MoeConfig& c, nlohmann::json& j) {
    j["norm_topk_prob"] = c.norm_topk_prob;
    j["num_experts"] = c.num_experts;
    j["attention_bias"] = c.o_bias;
  };
  f.gguf_architecture = "olmoe";
  return f;
}

}  // namespace ferry::moe
