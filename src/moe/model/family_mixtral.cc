// Mixtral (HF transformers' MixtralConfig and modeling_mixtral.py): experts w1/w3/w2 under
// block_sparse_moe, top-k weights always renormalised, sliding-window attention in every layer when
// sliding_window is set; no biases, no shared expert, no dense layers.
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "moe/model/config_json.h"
#include "moe/model/family.h"
#include "moe/model/gguf_layout.h"

namespace ferry::moe {

ModelFamily mixtral_family() {
  ModelFamily f;
  f.name = "mixtral";
  f.summary = "Mixtral-8x7B and its shape (MixtralForCausalLM)";
  // Configs that ferry's first tiny models wrote.
  f.aliases = {{"ferry_tiny"}};
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
        FERRY_THROW(FormatError, "config '", origin, "': sliding_window must be greater than 0 and max_window_layers at least 0");
    }
  };
  f.write = [](const MoeConfig& c, nlohmann::json& j) { j["num_local_experts"] = c.num_experts; };
  // GGUF: llama.cpp converts Mixtral as a llama with experts (LlamaModel): q/k rows permuted,
  // vocab_size, rope.dimension_count and linear rope scaling added.
  f.gguf_architecture = "llama";
  f.gguf_permute_qk = true;
  f.gguf_metadata = [](const MoeConfig& c, const nlohmann::json&, GgufKeys& k) {
    k.set_u32(k.arch("vocab_size"), c.vocab_size);
    k.set_u32(k.arch("rope.dimension_count"), c.head_dim);  // head_dim, else hidden_size / heads
    // The converter asks rope_scaling's "type"; ferry reads "type" and "rope_type" alike.
    if (c.rope_scaling.type == "linear") {
      k.set_string(k.arch("rope.scaling.type"), "linear");
      k.set_f32(k.arch("rope.scaling.factor"), c.rope_scaling.factor);
    }
  };
  f.gguf_read_metadata = [](GgufArchReader& r, nlohmann::json& j) {
    r.take_int("expert_count", j, "num_local_experts", /*required=*/true);
    r.take_equal("vocab_size", j["vocab_size"].get<std::int64_t>(), "the rows of token_embd");
    r.take_equal("rope.dimension_count", gguf_hf_head_dim(j), "rotary embedding of whole heads");
    const std::string scaling = r.take_string("rope.scaling.type", "none");
    if (scaling == "linear") {
      const quant::GgufValue* factor = r.take("rope.scaling.factor");
      if (!factor || !factor->is_number()) r.refuse("rope.scaling.type", "linear scaling needs rope.scaling.factor");
      j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", factor->is_integer() ? double(factor->i) : factor->f}};
    } else if (scaling != "none") {
      r.refuse("rope.scaling.type", "implemented: none, linear");
    }
  };
  f.gguf_check = [](const MoeConfig& c) {
    gguf_refuse_rope_scaling(c, /*linear_written=*/true);
    std::vector<std::string> notes;
    if (c.sliding_window > 0)
      notes.push_back("sliding_window " + std::to_string(c.sliding_window) +
                      " is not written: llama.cpp's llama architecture attends to the whole context");
    return notes;
  };
  return f;
}

}  // namespace ferry::moe
