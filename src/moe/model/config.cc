#include "moe/model/config.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace ferry::moe {
namespace {

template <typename T>
T get_or(const nlohmann::json& j, const char* key, T fallback, const std::string& origin) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  try {
    return j[key].get<T>();
  } catch (const nlohmann::json::exception&) {
    FERRY_THROW(FormatError, "config '", origin, "': field '", key, "' has the wrong type (", j[key].dump(), ")");
  }
}

// An integer field that fits an int: nlohmann's get<int>() would silently truncate a larger
// integer and convert a float (undefined behaviour when it is out of int's range).
int checked_int(const nlohmann::json& v, const char* key, const std::string& origin) {
  const bool fits = v.is_number_unsigned() ? v.get<std::uint64_t>() <= std::numeric_limits<int>::max()
                    : v.is_number_integer() ? v.get<std::int64_t>() >= std::numeric_limits<int>::min() &&
                                                  v.get<std::int64_t>() <= std::numeric_limits<int>::max()
                                            : false;
  if (!fits)
    FERRY_THROW(FormatError, "config '", origin, "': field '", key, "' must be an integer in int range, got ",
                v.dump());
  return v.get<int>();
}

template <>
int get_or<int>(const nlohmann::json& j, const char* key, int fallback, const std::string& origin) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  return checked_int(j[key], key, origin);
}

int require_int(const nlohmann::json& j, const char* key, const std::string& origin) {
  if (!j.contains(key)) FERRY_THROW(FormatError, "config '", origin, "': missing required field '", key, "'");
  return checked_int(j[key], key, origin);
}

// Every key of a family's config.json that ferry accepts: the ones it reads, and the ones that do
// not change inference (bookkeeping, or training-only: dropout, router jitter and aux loss, which
// HF's modeling code applies in training only). Any other key is refused with its name, so that a
// checkpoint never silently computes something else (docs/moe.md, "Checkpoints").
const std::set<std::string>& known_keys(const std::string& family) {
  static const std::set<std::string> common = {
      // read
      "model_type", "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
      "num_key_value_heads", "head_dim", "num_experts_per_tok", "norm_topk_prob", "rms_norm_eps", "rope_theta",
      "rope_parameters", "rope_scaling", "max_position_embeddings", "tie_word_embeddings", "hidden_act",
      "sliding_window", "ferry_tokenizer",
      // inert at inference
      "architectures", "torch_dtype", "dtype", "transformers_version", "_name_or_path", "bos_token_id",
      "eos_token_id", "pad_token_id", "initializer_range", "use_cache", "output_router_logits",
      "router_aux_loss_coef", "router_jitter_noise", "attention_dropout", "return_dict", "output_hidden_states",
      "output_attentions"};
  static const std::set<std::string> mixtral = [] {
    std::set<std::string> k = common;
    k.insert("num_local_experts");
    return k;
  }();
  static const std::set<std::string> qwen2_moe = [] {
    std::set<std::string> k = common;
    for (const char* key : {"num_experts", "num_local_experts", "moe_intermediate_size", "shared_expert_intermediate_size",
                            "shared_expert_gate", "use_sliding_window", "max_window_layers", "decoder_sparse_step",
                            "mlp_only_layers", "qkv_bias", "layer_types"})
      k.insert(key);
    return k;
  }();
  return family == "qwen2_moe" ? qwen2_moe : mixtral;
}

// Keys whose non-default values change the math in ways ferry does not implement (yet): each is
// refused with one line naming it and its value.
void refuse_unimplemented(const nlohmann::json& j, const std::string& family, const std::string& origin) {
  auto refuse = [&](const std::string& key, const std::string& why) {
    FERRY_THROW(FormatError, "config '", origin, "': ", key, " = ", j.at(key).dump(), " is not implemented (", why, ")");
  };
  auto set = [&](const char* key) { return j.contains(key) && !j[key].is_null(); };
  for (auto it = j.begin(); it != j.end(); ++it)
    if (!known_keys(family).count(it.key()))
      FERRY_THROW(FormatError, "config '", origin, "': key '", it.key(), "' is not implemented for model_type '", family,
                  "' (ferry refuses keys it does not know rather than ignore them)");
  if (set("hidden_act")) {
    const auto& a = j["hidden_act"];
    if (!a.is_string() || (a != "silu" && a != "swish" && a != "gelu" && a != "gelu_pytorch_tanh" && a != "gelu_new"))
      refuse("hidden_act", "implemented: silu, swish, gelu, gelu_pytorch_tanh, gelu_new");
  }
  if (set("layer_types"))
    for (const auto& t : j["layer_types"])
      if (t != "full_attention") refuse("layer_types", "every layer must be full_attention");
  if (set("mlp_only_layers") && !(j["mlp_only_layers"].is_array() && j["mlp_only_layers"].empty()))
    refuse("mlp_only_layers", "dense layers among MoE layers");
  if (set("decoder_sparse_step") && j["decoder_sparse_step"] != 1)
    refuse("decoder_sparse_step", "dense layers among MoE layers; every layer must be sparse (1)");
  if (set("qkv_bias") && j["qkv_bias"] != true) refuse("qkv_bias", "Qwen2-MoE's attention has q/k/v biases");
}

// rope_scaling, or the newer rope_parameters (which also holds rope_theta): the types HF's rope
// initialisers define that ferry implements, each with exactly its fields.
RopeScaling parse_rope_scaling(const nlohmann::json& j, const std::string& origin) {
  const char* key = j.contains("rope_parameters") && !j["rope_parameters"].is_null() ? "rope_parameters"
                                                                                     : "rope_scaling";
  RopeScaling s;
  if (std::string(key) == "rope_parameters" && j.contains("rope_scaling") && !j["rope_scaling"].is_null())
    FERRY_THROW(FormatError, "config '", origin, "': both rope_parameters and rope_scaling are set; expected one");
  if (!j.contains(key) || j[key].is_null()) return s;
  const nlohmann::json& r = j[key];
  auto refuse = [&](const std::string& why) {
    FERRY_THROW(FormatError, "config '", origin, "': ", key, " = ", r.dump(), " is not implemented (", why, ")");
  };
  if (!r.is_object()) refuse("expected an object");
  s.type = get_or<std::string>(r, "rope_type", get_or<std::string>(r, "type", "default", origin), origin);
  std::set<std::string> fields = {"rope_type", "type", "rope_theta"};
  if (s.type == "linear") {
    fields.insert("factor");
  } else if (s.type == "llama3") {
    fields.insert({"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"});
  } else if (s.type != "default") {
    refuse("implemented: default, linear, llama3");
  }
  for (auto it = r.begin(); it != r.end(); ++it)
    if (!fields.count(it.key())) refuse("field '" + it.key() + "' is not one of rope_type " + s.type + "'s");
  auto positive = [&](const char* field, double fallback) {
    const double v = get_or<double>(r, field, fallback, origin);
    if (!(std::isfinite(v) && v > 0)) refuse(std::string(field) + " must be a finite number > 0");
    return v;
  };
  if (s.type == "linear" || s.type == "llama3") s.factor = positive("factor", 0);
  if (s.type == "llama3") {
    s.low_freq_factor = positive("low_freq_factor", 0);
    s.high_freq_factor = positive("high_freq_factor", 0);
    if (!(s.high_freq_factor > s.low_freq_factor)) refuse("high_freq_factor must exceed low_freq_factor");
    s.original_max_position_embeddings = get_or<int>(r, "original_max_position_embeddings", 0, origin);
    if (s.original_max_position_embeddings <= 0) refuse("original_max_position_embeddings must be positive");
  }
  return s;
}

}  // namespace

double MoeConfig::parameter_count() const {
  const double H = hidden_size, V = vocab_size, D = head_dim, I = intermediate_size;
  const double S = shared_expert_intermediate_size;
  const double attention = H * (num_heads * D) * 2 + H * (num_kv_heads * D) * 2;
  const double per_layer = attention + 2 * H + num_experts * H + num_experts * 3 * H * I + 3 * H * S +
                           (S > 0 && shared_expert_gate ? H : 0);
  return V * H * (tie_word_embeddings ? 1 : 2) + num_layers * per_layer + H;
}

void MoeConfig::validate(const std::string& origin) const {
  auto need = [&](bool ok, const std::string& what) {
    if (!ok) FERRY_THROW(InvalidArgument, "config '", origin, "': ", what);
  };
  need(vocab_size > 0, "vocab_size must be positive");
  need(hidden_size > 0, "hidden_size must be positive");
  need(intermediate_size > 0, "intermediate_size must be positive");
  need(num_layers > 0, "num_hidden_layers must be positive");
  need(num_heads > 0 && num_kv_heads > 0, "attention heads must be positive");
  need(num_heads % num_kv_heads == 0, "num_attention_heads (" + std::to_string(num_heads) +
                                          ") must be a multiple of num_key_value_heads (" +
                                          std::to_string(num_kv_heads) + ")");
  need(head_dim > 0 && head_dim % 2 == 0, "head_dim must be positive and even");
  need(num_experts > 0, "num_local_experts must be positive");
  need(top_k > 0 && top_k <= num_experts, "num_experts_per_tok (" + std::to_string(top_k) + ") must be in 1.." +
                                              std::to_string(num_experts));
  need(max_position_embeddings > 0, "max_position_embeddings must be positive");
  need(std::isfinite(rms_norm_eps) && rms_norm_eps >= 0,
       "rms_norm_eps must be a finite number >= 0, got " + std::to_string(rms_norm_eps));
  need(std::isfinite(rope_theta) && rope_theta > 0, "rope_theta must be a finite number > 0, got " + std::to_string(rope_theta));
}

MoeConfig config_from_json(const nlohmann::json& j, const std::string& origin) {
  if (!j.is_object()) FERRY_THROW(FormatError, "config '", origin, "': expected a JSON object");
  MoeConfig c;
  c.model_type = get_or<std::string>(j, "model_type", "mixtral", origin);
  if (c.model_type != "mixtral" && c.model_type != "qwen2_moe" && c.model_type != "ferry_tiny")
    FERRY_THROW(FormatError, "config '", origin, "': model_type '", c.model_type,
                "' is not supported (mixtral, qwen2_moe)");
  if (c.model_type == "ferry_tiny") c.model_type = "mixtral";
  const bool qwen = c.model_type == "qwen2_moe";
  refuse_unimplemented(j, c.model_type, origin);
  c.vocab_size = require_int(j, "vocab_size", origin);
  c.hidden_size = require_int(j, "hidden_size", origin);
  c.num_layers = require_int(j, "num_hidden_layers", origin);
  c.num_heads = require_int(j, "num_attention_heads", origin);
  c.num_kv_heads = get_or<int>(j, "num_key_value_heads", c.num_heads, origin);
  c.head_dim = get_or<int>(j, "head_dim", c.num_heads > 0 ? c.hidden_size / c.num_heads : 0, origin);
  if (j.contains("moe_intermediate_size"))
    c.intermediate_size = require_int(j, "moe_intermediate_size", origin);
  else
    c.intermediate_size = require_int(j, "intermediate_size", origin);
  if (j.contains("num_local_experts"))
    c.num_experts = require_int(j, "num_local_experts", origin);
  else
    c.num_experts = require_int(j, "num_experts", origin);
  c.top_k = require_int(j, "num_experts_per_tok", origin);
  // HF's Mixtral always renormalises the top-k weights (its config has no such key); Qwen2-MoE
  // reads norm_topk_prob, default false.
  c.norm_topk_prob = qwen ? get_or<bool>(j, "norm_topk_prob", false, origin) : true;
  c.shared_expert_intermediate_size = get_or<int>(j, "shared_expert_intermediate_size", 0, origin);
  c.shared_expert_gate = get_or<bool>(j, "shared_expert_gate", qwen, origin);
  // The defaults are those of HF's MixtralConfig and Qwen2MoeConfig.
  c.rms_norm_eps = get_or<double>(j, "rms_norm_eps", qwen ? 1e-6 : 1e-5, origin);
  c.rope_theta = get_or<double>(j, "rope_theta", qwen ? 1e4 : 1e6, origin);
  if (j.contains("rope_parameters") && j["rope_parameters"].is_object() && j["rope_parameters"].contains("rope_theta"))
    c.rope_theta = get_or<double>(j["rope_parameters"], "rope_theta", c.rope_theta, origin);  // newer layout
  c.max_position_embeddings = get_or<int>(j, "max_position_embeddings", qwen ? 32768 : 4096 * 32, origin);
  c.rope_scaling = parse_rope_scaling(j, origin);
  c.hidden_act = get_or<std::string>(j, "hidden_act", "silu", origin);
  // Sliding-window attention as HF applies it: Mixtral in every layer when sliding_window is set;
  // Qwen2-MoE only with use_sliding_window, in the layers from max_window_layers on.
  const bool has_window = !(j.contains("sliding_window") && j["sliding_window"].is_null());
  const bool windowed = qwen ? get_or<bool>(j, "use_sliding_window", false, origin) && has_window
                             : j.contains("sliding_window") && has_window;
  if (windowed) {
    c.sliding_window = get_or<int>(j, "sliding_window", 4096, origin);
    c.max_window_layers = qwen ? get_or<int>(j, "max_window_layers", 28, origin) : 0;
    if (c.sliding_window <= 0 || c.max_window_layers < 0)
      FERRY_THROW(FormatError, "config '", origin, "': sliding_window must be positive and max_window_layers >= 0");
  }
  c.tie_word_embeddings = get_or<bool>(j, "tie_word_embeddings", false, origin);
  c.tokenizer = get_or<std::string>(j, "ferry_tokenizer", "", origin);
  c.validate(origin);
  return c;
}

MoeConfig load_config(const std::string& dir_or_file) {
  std::string path = dir_or_file;
  if (std::filesystem::is_directory(path)) path = (std::filesystem::path(path) / "config.json").string();
  std::ifstream in(path);
  if (!in) FERRY_THROW(IoError, "cannot open model config '", path, "'");
  nlohmann::json j;
  try {
    in >> j;
  } catch (const nlohmann::json::exception& e) {
    FERRY_THROW(FormatError, "config '", path, "' is not valid JSON: ", e.what());
  }
  return config_from_json(j, path);
}

nlohmann::json config_to_json(const MoeConfig& c) {
  nlohmann::json j = {{"architectures", {c.model_type == "qwen2_moe" ? "Qwen2MoeForCausalLM" : "MixtralForCausalLM"}},
                      {"model_type", c.model_type},
                      {"vocab_size", c.vocab_size},
                      {"hidden_size", c.hidden_size},
                      {"intermediate_size", c.intermediate_size},
                      {"num_hidden_layers", c.num_layers},
                      {"num_attention_heads", c.num_heads},
                      {"num_key_value_heads", c.num_kv_heads},
                      {"head_dim", c.head_dim},
                      {"num_local_experts", c.num_experts},
                      {"num_experts_per_tok", c.top_k},
                      {"norm_topk_prob", c.norm_topk_prob},
                      {"rms_norm_eps", c.rms_norm_eps},
                      {"rope_theta", c.rope_theta},
                      {"max_position_embeddings", c.max_position_embeddings},
                      {"tie_word_embeddings", c.tie_word_embeddings}};
  if (c.model_type == "qwen2_moe") {
    j["moe_intermediate_size"] = c.intermediate_size;
    j["num_experts"] = c.num_experts;
  }
  if (c.shared_expert_intermediate_size > 0) {
    j["shared_expert_intermediate_size"] = c.shared_expert_intermediate_size;
    j["shared_expert_gate"] = c.shared_expert_gate;
  }
  if (!c.tokenizer.empty()) j["ferry_tokenizer"] = c.tokenizer;
  if (c.hidden_act != "silu") j["hidden_act"] = c.hidden_act;
  if (c.sliding_window > 0) {
    j["sliding_window"] = c.sliding_window;
    if (c.model_type == "qwen2_moe") {
      j["use_sliding_window"] = true;
      j["max_window_layers"] = c.max_window_layers;
    }
  }
  const RopeScaling& s = c.rope_scaling;
  if (s.type == "linear") j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", s.factor}};
  if (s.type == "llama3")
    j["rope_scaling"] = {{"rope_type", "llama3"},
                         {"factor", s.factor},
                         {"low_freq_factor", s.low_freq_factor},
                         {"high_freq_factor", s.high_freq_factor},
                         {"original_max_position_embeddings", s.original_max_position_embeddings}};
  return j;
}

}  // namespace ferry::moe
