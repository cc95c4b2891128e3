// Mixtral (HF transformers' MixtralConfig and modeling_mixtral.py): experts w1/w3/w2 under
// block_sparse_moe, top-k weights always renormalised, sliding-window attention in every layer when
// sliding_window is set; no biases, no shared expert, no dense layers.
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "moe/model/config_json.h"
#include "moe/model/family.h"

namespace ferry::moe {

ModelFamily mixtral_family() {
  ModelFamily f;
  f.name = "mixtral";
  f.summary = "Mixtral-8x7B and its shape (MixtralForCausalLM)";
  // Configs that ferry's first tiny models wrote.
  f.aliases = {"ferry_tiny"};
  f.hf_architecture = "MixtralForCausalLM";
  f.defaults = {.rms_norm_eps = 1e-5, .rope_theta = 1e6, .max_position_embeddings = 4096 * 32, .norm_topk_prob = true};
  f.config_keys = {"num_local_experts", "head_dim", "sliding_window"};
  f.tensors = {.moe_module = "block_sparse_moe.", .gate = "w1", .up = "w3", .down = "w2", .shared_expert = ""};
  f.chat_template = "mistral";
  f.read = [](const nlohmann::json& j, MoeConfig& c, const std::string& origin) {
    c.intermediate_size = config_require_int(j, "intermediate_size", origin);
    c.num_experts = config_num_experts(j, origin);
    c.norm_topk_prob = true;  // HF's Mixtral always renormalises (its config has no such key)
    if (config_has(j, "sliding_window")) {
      c.sliding_window = config_get_or<int>(j, "sliding_window", 4096, origin);
      c.max_window_layers = 0;
      if (c.sliding_window <= 0)
        FERRY_THROW(FormatError, "config '", origin, "': sliding_window must be positive and max_window_layers >= 0");
    }
  };
  f.write = [](const MoeConfig& c, nlohmann::json& j) { j["num_local_experts"] = c.num_experts; };
  f.gguf_architecture = "llama";  // llama.cpp converts Mixtral as a llama with experts
  return f;
}

}  // namespace ferry::moe
