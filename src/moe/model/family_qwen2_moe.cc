// Qwen2-MoE (HF transformers' Qwen2MoeConfig and modeling_qwen2_moe.py): experts of
// moe_intermediate_size, a sigmoid-gated shared expert, dense MLP layers by mlp_only_layers and
// decoder_sparse_step, q/k/v biases, sliding-window attention from max_window_layers on when
// use_sliding_window is set.
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "moe/model/config_json.h"
#include "moe/model/family.h"
#include "moe/model/gguf_layout.h"

namespace ferry::moe {

// The converter's Qwen2MoeModel.set_gguf_parameters (also Qwen3-MoE's): the expert count and
// widths, each when config.json has its key.
void qwen_moe_gguf_metadata(const MoeConfig&, const nlohmann::json& j, GgufKeys& k) {
  if (config_has(j, "num_experts")) k.set_u32(k.arch("expert_count"), j["num_experts"].get<std::int64_t>());
  if (config_has(j, "moe_intermediate_size"))
    k.set_u32(k.arch("expert_feed_forward_length"), j["moe_intermediate_size"].get<std::int64_t>());
  if (config_has(j, "shared_expert_intermediate_size"))
    k.set_u32(k.arch("expert_shared_feed_forward_length"), j["shared_expert_intermediate_size"].get<std::int64_t>());
}

// Their inverse (gguf_read_metadata): the expert count and widths back to config.json's keys.
void qwen_moe_gguf_read(GgufArchReader& r, nlohmann::json& j) {
  r.take_int("expert_count", j, "num_experts", /*required=*/true);
  r.take_int("expert_feed_forward_length", j, "moe_intermediate_size");
}

ModelFamily qwen2_moe_family() {
  ModelFamily f;
  f.name = "qwen2_moe";
  f.summary = "Qwen1.5-MoE / Qwen2-MoE (Qwen2MoeForCausalLM)";
  f.hf_architecture = "Qwen2MoeForCausalLM";
  f.defaults = {.rms_norm_eps = 1e-6, .rope_theta = 1e4, .max_position_embeddings = 32768, .norm_topk_prob = false};
  f.config_keys = {"num_experts",       "num_local_experts", "head_dim",           "moe_intermediate_size",
                   "shared_expert_intermediate_size",       "shared_expert_gate", "sliding_window",
                   "use_sliding_window", "max_window_layers", "decoder_sparse_step", "mlp_only_layers",
                   "qkv_bias",           "layer_types"};
  f.chat_template = "chatml";
  f.has_shared_expert = true;
  f.has_dense_layers = true;
  f.read = [](const nlohmann::json& j, MoeConfig& c, const std::string& origin) {
    if (config_has(j, "qkv_bias") && j["qkv_bias"] != true)
      config_refuse(j, "qkv_bias", "Qwen2-MoE's attention has q/k/v biases", origin);
    // Experts are moe_intermediate_size wide, the dense layers intermediate_size (HF's defaults).
    c.intermediate_size = config_get_or<int>(j, "moe_intermediate_size", 1408, origin);
    c.dense_intermediate_size = config_get_or<int>(j, "intermediate_size", 5632, origin);
    c.num_experts = config_num_experts(j, origin);
    c.shared_expert_intermediate_size = config_get_or<int>(j, "shared_expert_intermediate_size", 0, origin);
    c.shared_expert_gate = config_get_or<bool>(j, "shared_expert_gate", true, origin);
    c.dense_layers = qwen_dense_layers(j, c.num_layers, c.num_experts, origin);
    c.qkv_bias = true;
    // Windowed only with use_sliding_window, from max_window_layers on; a null sliding_window
    // turns it off.
    const bool has_window = !(j.contains("sliding_window") && j["sliding_window"].is_null());
    if (config_get_or<bool>(j, "use_sliding_window", false, origin) && has_window) {
      c.sliding_window = config_get_or<int>(j, "sliding_window", 4096, origin);
      c.max_window_layers = config_get_or<int>(j, "max_window_layers", 28, origin);
      if (c.sliding_window <= 0 || c.max_window_layers < 0)
        FERRY_THROW(FormatError, "config '", origin, "': sliding_window must be greater than 0 and max_window_layers at least 0");
    }
  };
  f.write = [](const MoeConfig& c, nlohmann::json& j) {
    j["norm_topk_prob"] = c.norm_topk_prob;
    j["num_experts"] = c.num_experts;
    j["moe_intermediate_size"] = c.intermediate_size;
    j["intermediate_size"] = c.dense_layers.empty() ? c.intermediate_size : c.dense_intermediate_size;
    j["mlp_only_layers"] = c.dense_layers;
    if (c.shared_expert_intermediate_size > 0) {
      j["shared_expert_intermediate_size"] = c.shared_expert_intermediate_size;
      j["shared_expert_gate"] = c.shared_expert_gate;
    }
    if (c.sliding_window > 0) {
      j["use_sliding_window"] = true;
      j["max_window_layers"] = c.max_window_layers;
    }
  };
  // GGUF (the converter's Qwen2MoeModel): expert widths added; llama.cpp's qwen2moe has a
  // sigmoid-gated shared expert in every layer and no dense layers.
  f.gguf_architecture = "qwen2moe";
  f.gguf_tokenizer_pre = "qwen2";
  f.gguf_metadata = qwen_moe_gguf_metadata;
  f.gguf_read_metadata = [](GgufArchReader& r, nlohmann::json& j) {
    qwen_moe_gguf_read(r, j);
    r.take_int("expert_shared_feed_forward_length", j, "shared_expert_intermediate_size");
    j["norm_topk_prob"] = false;  // llama.cpp's qwen2moe does not renormalise the top-k weights
  };
  f.gguf_check = [](const MoeConfig& c) {
    gguf_refuse_rope_scaling(c, false);
    FERRY_REQUIRE(c.dense_layers.empty(), "config mlp_only_layers / decoder_sparse_step: llama.cpp's qwen2moe has no "
                                          "dense layers");
    FERRY_REQUIRE(c.shared_expert_intermediate_size > 0 && c.shared_expert_gate,
                  "config shared_expert_intermediate_size: llama.cpp's qwen2moe needs a gated shared expert");
    FERRY_REQUIRE(c.num_heads * c.head_dim == c.hidden_size, "config head_dim: llama.cpp's qwen2moe needs "
                                                             "num_attention_heads x head_dim = hidden_size");
    std::vector<std::string> notes;
    if (c.norm_topk_prob) notes.push_back("norm_topk_prob true is not written: llama.cpp's qwen2moe does not renormalise");
    if (c.sliding_window > 0) notes.push_back("the sliding window is not written: llama.cpp's qwen2moe has none");
    return notes;
  };
  return f;
}

}  // namespace ferry::moe
