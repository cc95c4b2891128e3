#include "moe/model/config.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace ferry::moe {
namespace {

constexpr int kMaxLayers = 1 << 16;  // far above any model's depth; bounds the per-layer tables

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
      "num_key_value_heads", "num_experts_per_tok", "norm_topk_prob", "rms_norm_eps", "rope_theta",
      "rope_parameters", "rope_scaling", "max_position_embeddings", "tie_word_embeddings", "hidden_act",
      "ferry_tokenizer",
      // inert at inference
      "architectures", "torch_dtype", "dtype", "transformers_version", "_name_or_path", "bos_token_id",
      "eos_token_id", "pad_token_id", "initializer_range", "use_cache", "output_router_logits",
      "router_aux_loss_coef", "router_jitter_noise", "attention_dropout", "return_dict", "output_hidden_states",
      "output_attentions"};
  auto with = [](std::initializer_list<const char*> keys) {
    std::set<std::string> k = common;
    for (const char* key : keys) k.insert(key);
    return k;
  };
  static const std::set<std::string> mixtral = with({"num_local_experts", "head_dim", "sliding_window"});
  static const std::set<std::string> qwen2_moe =
      with({"num_experts", "num_local_experts", "head_dim", "moe_intermediate_size", "shared_expert_intermediate_size",
            "shared_expert_gate", "sliding_window", "use_sliding_window", "max_window_layers", "decoder_sparse_step",
            "mlp_only_layers", "qkv_bias", "layer_types"});
  static const std::set<std::string> qwen3_moe =
      with({"num_experts", "head_dim", "moe_intermediate_size", "sliding_window", "use_sliding_window",
            "max_window_layers", "decoder_sparse_step", "mlp_only_layers", "attention_bias", "layer_types"});
  static const std::set<std::string> olmoe = with({"num_experts", "head_dim", "attention_bias", "clip_qkv"});
  // DeepSeek-MoE V1 (deepseek-ai/deepseek-moe-16b's modeling_deepseek.py): pretraining_tp only
  // splits the same matmuls; aux_loss_alpha and seq_aux are training-only.
  static const std::set<std::string> deepseek =
      with({"n_routed_experts", "n_shared_experts", "moe_intermediate_size", "first_k_dense_replace", "moe_layer_freq",
            "scoring_func", "attention_bias", "pretraining_tp", "aux_loss_alpha", "seq_aux"});
  if (family == "qwen2_moe") return qwen2_moe;
  if (family == "qwen3_moe") return qwen3_moe;
  if (family == "olmoe") return olmoe;
  if (family == "deepseek") return deepseek;
  return mixtral;
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
  if (set("qkv_bias") && j["qkv_bias"] != true) refuse("qkv_bias", "Qwen2-MoE's attention has q/k/v biases");
  if (set("scoring_func") && j["scoring_func"] != "softmax") refuse("scoring_func", "implemented: softmax");
  // Transformers versions disagree on which Qwen3-MoE layers a window applies to (all, or those
  // from max_window_layers on): refused rather than guessed. Released checkpoints set it false.
  if (family == "qwen3_moe" && set("use_sliding_window") && j["use_sliding_window"] != false)
    refuse("use_sliding_window", "Qwen3-MoE's windowed layers differ between transformers versions");
}

// The decoder layers that have a dense MLP instead of experts, as each family's modeling code
// chooses them.
std::vector<int> dense_layers_of(const nlohmann::json& j, const std::string& family, int num_layers, int num_experts,
                                 const std::string& origin) {
  std::vector<int> dense;
  if (family == "qwen2_moe" || family == "qwen3_moe") {
    // Qwen2MoeDecoderLayer: sparse iff layer not in mlp_only_layers and (layer + 1) % step == 0.
    const int step = get_or<int>(j, "decoder_sparse_step", 1, origin);
    if (step < 1) FERRY_THROW(FormatError, "config '", origin, "': decoder_sparse_step must be >= 1, got ", step);
    std::set<int> only;
    if (j.contains("mlp_only_layers") && !j["mlp_only_layers"].is_null()) {
      if (!j["mlp_only_layers"].is_array())
        FERRY_THROW(FormatError, "config '", origin, "': mlp_only_layers must be a list of layer indices");
      for (const auto& v : j["mlp_only_layers"]) {
        const int l = checked_int(v, "mlp_only_layers", origin);
        if (l < 0 || l >= num_layers)
          FERRY_THROW(FormatError, "config '", origin, "': mlp_only_layers names layer ", l, ", outside 0..",
                      num_layers - 1);
        only.insert(l);
      }
    }
    for (int l = 0; l < num_layers; ++l)
      if (only.count(l) || !(num_experts > 0 && (l + 1) % step == 0)) dense.push_back(l);
  } else if (family == "deepseek") {
    // DeepseekDecoderLayer: MoE iff layer >= first_k_dense_replace and layer % moe_layer_freq == 0.
    const int first = get_or<int>(j, "first_k_dense_replace", 0, origin);
    const int freq = get_or<int>(j, "moe_layer_freq", 1, origin);
    if (first < 0 || freq < 1)
      FERRY_THROW(FormatError, "config '", origin, "': first_k_dense_replace must be >= 0 and moe_layer_freq >= 1");
    for (int l = 0; l < num_layers; ++l)
      if (!(l >= first && l % freq == 0)) dense.push_back(l);
  }
  return dense;
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
  const double S = shared_expert_intermediate_size, F = dense_intermediate_size;
  const double attention = H * (num_heads * D) * 2 + H * (num_kv_heads * D) * 2 + 2 * H;
  const double moe_layer = num_experts * H + num_experts * 3 * H * I + 3 * H * S + (S > 0 && shared_expert_gate ? H : 0);
  return V * H * (tie_word_embeddings ? 1 : 2) + num_layers * attention + num_moe_layers() * moe_layer +
         static_cast<double>(dense_layers.size()) * 3 * H * F + H;
}

int MoeConfig::moe_layer(int layer) const {
  const auto it = std::lower_bound(dense_layers.begin(), dense_layers.end(), layer);
  if (it != dense_layers.end() && *it == layer) return -1;
  return layer - static_cast<int>(it - dense_layers.begin());
}

int MoeConfig::decoder_layer(int moe_layer) const {
  int l = moe_layer;
  for (int d : dense_layers)
    if (d <= l) ++l;  // sorted: each dense layer at or before the candidate shifts it by one
  return l;
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
  need(std::is_sorted(dense_layers.begin(), dense_layers.end()) &&
           std::adjacent_find(dense_layers.begin(), dense_layers.end()) == dense_layers.end() &&
           (dense_layers.empty() || (dense_layers.front() >= 0 && dense_layers.back() < num_layers)),
       "dense layers must be distinct layer indices");
  need(num_moe_layers() >= 1, "every layer is dense: a model without experts is not an MoE model");
  need(dense_layers.empty() || dense_intermediate_size > 0, "the dense layers' intermediate_size must be positive");
  need(qk_norm.empty() || qk_norm == "head" || qk_norm == "full", "qk_norm must be head, full or empty");
  need(qk_norm != "full" || num_heads * head_dim == hidden_size,
       "OLMoE's q/k norms span hidden_size, so num_attention_heads x head_dim must equal it");
  need(std::isfinite(clip_qkv) && clip_qkv >= 0, "clip_qkv must be a finite number >= 0");
}

MoeConfig config_from_json(const nlohmann::json& j, const std::string& origin) {
  if (!j.is_object()) FERRY_THROW(FormatError, "config '", origin, "': expected a JSON object");
  MoeConfig c;
  c.model_type = get_or<std::string>(j, "model_type", "mixtral", origin);
  const std::string& f = c.model_type;
  if (f != "mixtral" && f != "qwen2_moe" && f != "qwen3_moe" && f != "olmoe" && f != "deepseek" && f != "ferry_tiny")
    FERRY_THROW(FormatError, "config '", origin, "': model_type '", c.model_type,
                "' is not supported (mixtral, qwen2_moe, qwen3_moe, olmoe, deepseek)");
  if (c.model_type == "ferry_tiny") c.model_type = "mixtral";
  const bool qwen2 = f == "qwen2_moe", qwen3 = f == "qwen3_moe", olmoe = f == "olmoe", deepseek = f == "deepseek";
  const bool qwen = qwen2 || qwen3;
  refuse_unimplemented(j, c.model_type, origin);
  c.vocab_size = require_int(j, "vocab_size", origin);
  c.hidden_size = require_int(j, "hidden_size", origin);
  c.num_layers = require_int(j, "num_hidden_layers", origin);
  if (c.num_layers > kMaxLayers)
    FERRY_THROW(FormatError, "config '", origin, "': num_hidden_layers = ", c.num_layers, " exceeds ferry's limit of ",
                kMaxLayers);
  c.num_heads = require_int(j, "num_attention_heads", origin);
  c.num_kv_heads = get_or<int>(j, "num_key_value_heads", c.num_heads, origin);
  c.head_dim = get_or<int>(j, "head_dim", c.num_heads > 0 ? c.hidden_size / c.num_heads : 0, origin);
  // Expert width: Mixtral's and OLMoE's experts are intermediate_size wide; Qwen's and DeepSeek's
  // moe_intermediate_size (HF's defaults), their dense layers intermediate_size.
  if (qwen || deepseek) {
    c.intermediate_size = get_or<int>(j, "moe_intermediate_size", qwen2 ? 1408 : qwen3 ? 768 : 1407, origin);
    c.dense_intermediate_size = get_or<int>(j, "intermediate_size", qwen2 ? 5632 : qwen3 ? 6144 : 11008, origin);
  } else {
    c.intermediate_size = require_int(j, "intermediate_size", origin);
  }
  if (deepseek) {
    c.num_experts = require_int(j, "n_routed_experts", origin);
  } else if (j.contains("num_local_experts")) {
    c.num_experts = require_int(j, "num_local_experts", origin);
  } else {
    c.num_experts = require_int(j, "num_experts", origin);
  }
  c.top_k = require_int(j, "num_experts_per_tok", origin);
  // HF's Mixtral always renormalises the top-k weights (its config has no such key); the others
  // read norm_topk_prob, default false; DeepSeek's gate renormalises only when top_k > 1.
  c.norm_topk_prob = f == "mixtral" ? true : get_or<bool>(j, "norm_topk_prob", false, origin);
  if (deepseek && c.top_k == 1) c.norm_topk_prob = false;
  if (deepseek) {
    const int shared = get_or<int>(j, "n_shared_experts", 0, origin);
    if (shared < 0) FERRY_THROW(FormatError, "config '", origin, "': n_shared_experts must be >= 0, got ", shared);
    c.shared_expert_intermediate_size = shared * c.intermediate_size;  // DeepseekMoE: one MLP of that width
    c.shared_expert_gate = false;
  } else if (qwen2) {
    c.shared_expert_intermediate_size = get_or<int>(j, "shared_expert_intermediate_size", 0, origin);
    c.shared_expert_gate = get_or<bool>(j, "shared_expert_gate", true, origin);
  }
  c.dense_layers = dense_layers_of(j, f, c.num_layers, c.num_experts, origin);
  // Attention: Qwen2-MoE has q/k/v biases; Qwen3-MoE, OLMoE and DeepSeek (Llama's attention)
  // biases on q/k/v/o with attention_bias; Mixtral none.
  c.o_bias = !qwen2 && f != "mixtral" && get_or<bool>(j, "attention_bias", false, origin);
  c.qkv_bias = qwen2 || c.o_bias;
  c.qk_norm = qwen3 ? "head" : olmoe ? "full" : "";
  c.clip_qkv = olmoe ? get_or<double>(j, "clip_qkv", 0.0, origin) : 0.0;
  if (olmoe && j.contains("clip_qkv") && !j["clip_qkv"].is_null() && !(c.clip_qkv > 0))
    FERRY_THROW(FormatError, "config '", origin, "': clip_qkv must be a positive number or null, got ",
                j["clip_qkv"].dump());
  // The defaults are those of HF's config classes (DeepSeek: the V1 checkpoint's configuration).
  c.rms_norm_eps = get_or<double>(j, "rms_norm_eps", (qwen || deepseek) ? 1e-6 : 1e-5, origin);
  c.rope_theta = get_or<double>(j, "rope_theta", f == "mixtral" ? 1e6 : 1e4, origin);
  if (j.contains("rope_parameters") && j["rope_parameters"].is_object() && j["rope_parameters"].contains("rope_theta"))
    c.rope_theta = get_or<double>(j["rope_parameters"], "rope_theta", c.rope_theta, origin);  // newer layout
  c.max_position_embeddings = get_or<int>(j, "max_position_embeddings",
                                          qwen ? 32768 : olmoe ? 4096 : deepseek ? 2048 : 4096 * 32, origin);
  c.rope_scaling = parse_rope_scaling(j, origin);
  c.hidden_act = get_or<std::string>(j, "hidden_act", "silu", origin);
  // Sliding-window attention as HF applies it: Mixtral in every layer when sliding_window is set;
  // Qwen2-MoE only with use_sliding_window, in the layers from max_window_layers on (Qwen3-MoE's
  // use_sliding_window is refused above; OLMoE and DeepSeek have none).
  const bool has_window = !(j.contains("sliding_window") && j["sliding_window"].is_null());
  const bool windowed = qwen2 ? get_or<bool>(j, "use_sliding_window", false, origin) && has_window
                              : f == "mixtral" && j.contains("sliding_window") && has_window;
  if (windowed) {
    c.sliding_window = get_or<int>(j, "sliding_window", 4096, origin);
    c.max_window_layers = qwen2 ? get_or<int>(j, "max_window_layers", 28, origin) : 0;
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
  const std::string& f = c.model_type;
  const bool qwen = f == "qwen2_moe" || f == "qwen3_moe", deepseek = f == "deepseek";
  const char* arch = f == "qwen2_moe" ? "Qwen2MoeForCausalLM"
                     : f == "qwen3_moe" ? "Qwen3MoeForCausalLM"
                     : f == "olmoe"     ? "OlmoeForCausalLM"
                     : deepseek         ? "DeepseekForCausalLM"
                                        : "MixtralForCausalLM";
  nlohmann::json j = {{"architectures", {arch}},
                      {"model_type", f},
                      {"vocab_size", c.vocab_size},
                      {"hidden_size", c.hidden_size},
                      {"intermediate_size", c.intermediate_size},
                      {"num_hidden_layers", c.num_layers},
                      {"num_attention_heads", c.num_heads},
                      {"num_key_value_heads", c.num_kv_heads},
                      {"num_experts_per_tok", c.top_k},
                      {"rms_norm_eps", c.rms_norm_eps},
                      {"rope_theta", c.rope_theta},
                      {"max_position_embeddings", c.max_position_embeddings},
                      {"tie_word_embeddings", c.tie_word_embeddings}};
  if (!deepseek) j["head_dim"] = c.head_dim;  // DeepSeek V1 always uses hidden_size / heads
  if (f == "mixtral") {
    j["num_local_experts"] = c.num_experts;
  } else {
    j["norm_topk_prob"] = c.norm_topk_prob;
    j[deepseek ? "n_routed_experts" : "num_experts"] = c.num_experts;
  }
  if (qwen || deepseek) {
    j["moe_intermediate_size"] = c.intermediate_size;
    j["intermediate_size"] = c.dense_layers.empty() ? c.intermediate_size : c.dense_intermediate_size;
  }
  if (qwen) j["mlp_only_layers"] = c.dense_layers;
  if (deepseek) {
    // MoE layers are those l >= first_k_dense_replace with l % moe_layer_freq == 0: the first MoE
    // layer and the distance to the next one give both (one MoE layer m: m, or the whole stack).
    std::vector<int> moe;
    for (int l = 0; l < c.num_layers && moe.size() < 2; ++l)
      if (c.moe_layer(l) >= 0) moe.push_back(l);
    const int first = moe.at(0);
    const int freq = moe.size() > 1 ? moe[1] - moe[0] : (first == 0 ? c.num_layers : first);
    j["first_k_dense_replace"] = first;
    j["moe_layer_freq"] = freq;
    FERRY_REQUIRE(dense_layers_of(j, "deepseek", c.num_layers, c.num_experts, "written") == c.dense_layers,
                  "DeepSeek's dense layers are the first ones and those between every moe_layer_freq-th: "
                  "these cannot be written as first_k_dense_replace and moe_layer_freq");
    FERRY_REQUIRE(c.shared_expert_intermediate_size % c.intermediate_size == 0,
                  "DeepSeek's shared experts are n_shared_experts x moe_intermediate_size wide");
    j["n_shared_experts"] = c.shared_expert_intermediate_size / c.intermediate_size;
    j["scoring_func"] = "softmax";
  }
  if (f == "qwen2_moe" && c.shared_expert_intermediate_size > 0) {
    j["shared_expert_intermediate_size"] = c.shared_expert_intermediate_size;
    j["shared_expert_gate"] = c.shared_expert_gate;
  }
  if (f == "qwen3_moe" || f == "olmoe" || deepseek) j["attention_bias"] = c.o_bias;
  if (c.clip_qkv > 0) j["clip_qkv"] = c.clip_qkv;
  if (!c.tokenizer.empty()) j["ferry_tokenizer"] = c.tokenizer;
  if (c.hidden_act != "silu") j["hidden_act"] = c.hidden_act;
  if (c.sliding_window > 0) {
    j["sliding_window"] = c.sliding_window;
    if (f == "qwen2_moe") {
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
