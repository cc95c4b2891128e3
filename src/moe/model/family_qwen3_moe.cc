// Qwen3-MoE (HF transformers' Qwen3MoeConfig and modeling_qwen3_moe.py): Qwen2-MoE's experts and
// dense-layer rule without the shared expert, RMSNorm of each q/k head, attention biases with
// attention_bias. Its sliding window is refused: transformers versions disagree on which layers it
// applies to (all, or those from max_window_layers on), and released checkpoints set it off.
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "moe/model/config_json.h"
#include "moe/model/family.h"
#include "moe/model/gguf_layout.h"

namespace ferry::moe {

// family_qwen2_moe.cc
void qwen_moe_gguf_metadata(const MoeConfig&, const nlohmann::json& j, GgufKeys& k);
void qwen_moe_gguf_read(GgufArchReader& r, nlohmann::json& j);

ModelFamily qwen3_moe_family() {
  ModelFamily f;
  f.name = "qwen3_moe";
  f.summary = "Qwen3-MoE (Qwen3MoeForCausalLM)";
  f.hf_architecture = "Qwen3MoeForCausalLM";
  f.defaults = {.rms_norm_eps = 1e-6, .rope_theta = 1e4, .max_position_embeddings = 32768, .norm_topk_prob = false};
  f.config_keys = {"num_experts",        "head_dim",          "moe_intermediate_size", "sliding_window",
                   "use_sliding_window", "max_window_layers", "decoder_sparse_step",   "mlp_only_layers",
                   "attention_bias",     "layer_types"};
  f.chat_template = "chatml";
  f.has_dense_layers = true;
  f.read = [](const nlohmann::json& j, MoeConfig& c, const std::string& origin) {
    if (config_has(j, "use_sliding_window") && j["use_sliding_window"] != false)
      config_refuse(j, "use_sliding_window", "Qwen3-MoE's windowed layers differ between transformers versions",
                    origin);
    c.intermediate_size = config_get_or<int>(j, "moe_intermediate_size", 768, origin);
    c.dense_intermediate_size = config_get_or<int>(j, "intermediate_size", 6144, origin);
    c.num_experts = config_num_experts(j, origin);
    c.dense_layers = qwen_dense_layers(j, c.num_layers, c.num_experts, origin);
    c.o_bias = config_get_or<bool>(j, "attention_bias", false, origin);
    c.qkv_bias = c.o_bias;
    c.qk_norm = "head";
  };
  f.write = [](const MoeConfig& c, nlohmann::json& j) {
    j["norm_topk_prob"] = c.norm_topk_prob;
    j["num_experts"] = c.num_experts;
    j["moe_intermediate_size"] = c.intermediate_size;
    j["intermediate_size"] = c.dense_layers.empty() ? c.intermediate_size : c.dense_intermediate_size;
    j["mlp_only_layers"] = c.dense_layers;
    j["attention_bias"] = c.o_bias;
  };
  // GGUF: the converter's Qwen3MoeModel is its Qwen2MoeModel under another architecture.
  f.gguf_architecture = "qwen3moe";
  f.gguf_tokenizer_pre = "qwen2";
  f.gguf_metadata = qwen_moe_gguf_metadata;
  f.gguf_read_metadata = [](GgufArchReader& r, nlohmann::json& j) {
    qwen_moe_gguf_read(r, j);
    j["norm_topk_prob"] = true;  // llama.cpp's qwen3moe renormalises the top-k weights
  };
  f.gguf_check = [](const MoeConfig& c) {
    gguf_refuse_rope_scaling(c, false);
    FERRY_REQUIRE(c.dense_layers.empty(), "config mlp_only_layers / decoder_sparse_step: llama.cpp's qwen3moe has no "
                                          "dense layers");
    FERRY_REQUIRE(!c.qkv_bias && !c.o_bias, "config attention_bias: llama.cpp's qwen3moe has no attention biases");
    std::vector<std::string> notes;
    if (!c.norm_topk_prob)
      notes.push_back("norm_topk_prob false is not written: llama.cpp's qwen3moe renormalises the top-k weights");
    return notes;
  };
  return f;
}

}  // namespace ferry::moe
