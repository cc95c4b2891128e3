#include "moe/model/config.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

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
  c.norm_topk_prob = get_or<bool>(j, "norm_topk_prob", c.model_type == "mixtral", origin);
  c.shared_expert_intermediate_size = get_or<int>(j, "shared_expert_intermediate_size", 0, origin);
  c.shared_expert_gate = get_or<bool>(j, "shared_expert_gate", c.model_type == "qwen2_moe", origin);
  c.rms_norm_eps = get_or<double>(j, "rms_norm_eps", 1e-5, origin);
  c.rope_theta = get_or<double>(j, "rope_theta", 1e6, origin);
  c.max_position_embeddings = get_or<int>(j, "max_position_embeddings", 4096, origin);
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
  return j;
}

}  // namespace ferry::moe
