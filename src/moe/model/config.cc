#include "core/json_depth.h"
#include "moe/model/config.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/path_checks.h"
#include "moe/model/config_json.h"
#include "moe/model/family.h"
#include "moe/model/gguf_layout.h"

namespace ferry::moe {
namespace {

constexpr int kMaxLayers = 1 << 16;  // far above any model's depth; bounds the per-layer tables

// Every key of config.json that ferry accepts for every family: the ones it reads, and the ones
// that do not change inference (bookkeeping, or training-only: dropout, router jitter and aux loss,
// which HF's modeling code applies in training only). A family adds its own (ModelFamily::
// config_keys); any other key is refused with its name, so that a checkpoint never silently
// computes something else (docs/moe.md, "Checkpoints").
const std::set<std::string>& common_keys() {
  static const std::set<std::string> keys = {
      // read
      "model_type", "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
      "num_key_value_heads", "num_experts_per_tok", "norm_topk_prob", "rms_norm_eps", "rope_theta",
      "rope_parameters", "rope_scaling", "max_position_embeddings", "tie_word_embeddings", "hidden_act",
      "ferry_tokenizer",
      // inert at inference
      "architectures", "torch_dtype", "dtype", "transformers_version", "_name_or_path", "bos_token_id",
      "eos_token_id", "pad_token_id", "initializer_range", "use_cache", "output_router_logits",
      "router_aux_loss_coef", "router_jitter_noise", "attention_dropout", "return_dict", "output_hidden_states",
      "output_attentions", "auto_map"};
  return keys;
}

// Keys ferry does not know for this family, and values of common keys that change the math in ways
// ferry does not implement (yet): each is refused with one line naming it and its value. The
// family's own refusals are in its read().
void refuse_unimplemented(const nlohmann::json& j, const ModelFamily& family, const std::string& origin) {
  for (auto it = j.begin(); it != j.end(); ++it)
    if (!common_keys().count(it.key()) &&
        std::find(family.config_keys.begin(), family.config_keys.end(), it.key()) == family.config_keys.end())
      FERRY_THROW(FormatError, "config '", origin, "': key '", it.key(), "' is not implemented for model_type '",
                  family.name, "' (ferry refuses keys it does not know rather than ignore them)");
  if (config_has(j, "hidden_act")) {
    const auto& a = j["hidden_act"];
    if (!a.is_string() || (a != "silu" && a != "swish" && a != "gelu" && a != "gelu_pytorch_tanh" && a != "gelu_new"))
      config_refuse(j, "hidden_act", "implemented: silu, swish, gelu, gelu_pytorch_tanh, gelu_new", origin);
  }
  if (config_has(j, "layer_types") && !family.has_sliding_layers)  // else the family's read() takes them
    for (const auto& t : j["layer_types"])
      if (t != "full_attention") config_refuse(j, "layer_types", "every layer must be full_attention", origin);
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
  s.type = config_get_or<std::string>(r, "rope_type", config_get_or<std::string>(r, "type", "default", origin), origin);
  std::set<std::string> fields = {"rope_type", "type", "rope_theta"};
  if (s.type == "linear") {
    fields.insert("factor");
  } else if (s.type == "llama3") {
    fields.insert({"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"});
  } else if (s.type == "yarn") {
    fields.insert({"factor", "original_max_position_embeddings", "beta_fast", "beta_slow", "mscale", "mscale_all_dim",
                   "truncate"});
  } else if (s.type != "default") {
    refuse("implemented: default, linear, llama3, yarn");
  }
  for (auto it = r.begin(); it != r.end(); ++it)
    if (!fields.count(it.key())) refuse("field '" + it.key() + "' is not one of rope_type " + s.type + "'s");
  auto positive = [&](const char* field, double fallback) {
    const double v = config_get_or<double>(r, field, fallback, origin);
    if (!(std::isfinite(v) && v > 0)) refuse(std::string(field) + " must be finite and greater than 0");
    return v;
  };
  if (s.type == "linear" || s.type == "llama3" || s.type == "yarn") s.factor = positive("factor", 0);
  if (s.type == "yarn") {  // DeepSeek's DeepseekV2YarnRotaryEmbedding and its defaults
    s.original_max_position_embeddings = config_get_or<int>(r, "original_max_position_embeddings", 4096, origin);
    if (s.original_max_position_embeddings <= 0) refuse("original_max_position_embeddings must be positive");
    s.beta_fast = positive("beta_fast", 32);
    s.beta_slow = positive("beta_slow", 1);
    s.mscale = config_get_or<double>(r, "mscale", 1, origin);
    s.mscale_all_dim = config_get_or<double>(r, "mscale_all_dim", 0, origin);
    if (!(std::isfinite(s.mscale) && std::isfinite(s.mscale_all_dim) && s.mscale >= 0 && s.mscale_all_dim >= 0))
      refuse("mscale and mscale_all_dim must be finite and at least 0");
    s.truncate = config_get_or<bool>(r, "truncate", true, origin);
  }
  if (s.type == "llama3") {
    s.low_freq_factor = positive("low_freq_factor", 0);
    s.high_freq_factor = positive("high_freq_factor", 0);
    if (!(s.high_freq_factor > s.low_freq_factor)) refuse("high_freq_factor must exceed low_freq_factor");
    s.original_max_position_embeddings = config_get_or<int>(r, "original_max_position_embeddings", 0, origin);
    if (s.original_max_position_embeddings <= 0) refuse("original_max_position_embeddings must be greater than 0");
  }
  return s;
}

}  // namespace

double MoeConfig::parameter_count() const {
  const double H = hidden_size, V = vocab_size, D = head_dim, I = intermediate_size;
  const double S = shared_expert_intermediate_size, F = dense_intermediate_size;
  const double R = rotary_dims(), L = kv_lora_rank, Q = q_lora_rank;
  const double attention = mla() ? (Q > 0 ? H * Q + Q + Q * num_heads * D : H * num_heads * D) + H * (L + R) + L +
                                       L * num_heads * (D - R + v_head_dim) + num_heads * v_head_dim * H + 2 * H
                                 : H * (num_heads * D) * 2 + H * (num_kv_heads * D) * 2 + 2 * H;
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
  need(vocab_size > 0, "vocab_size must be greater than 0");
  need(hidden_size > 0, "hidden_size must be greater than 0");
  need(intermediate_size > 0, "intermediate_size must be greater than 0");
  need(num_layers > 0, "num_hidden_layers must be greater than 0");
  need(num_heads > 0 && num_kv_heads > 0, "attention heads must be greater than 0");
  need(num_heads % num_kv_heads == 0, "num_attention_heads (" + std::to_string(num_heads) +
                                          ") must be a multiple of num_key_value_heads (" +
                                          std::to_string(num_kv_heads) + ")");
  need(head_dim > 0 && head_dim % 2 == 0, "head_dim must be even and greater than 0");
  need(num_experts > 0, "num_local_experts must be greater than 0");
  need(top_k > 0 && top_k <= num_experts, "num_experts_per_tok (" + std::to_string(top_k) + ") must be in 1.." +
                                              std::to_string(num_experts));
  need(max_position_embeddings > 0, "max_position_embeddings must be greater than 0");
  need(std::isfinite(rms_norm_eps) && rms_norm_eps >= 0,
       "rms_norm_eps must be finite and at least 0, got " + std::to_string(rms_norm_eps));
  need(std::isfinite(rope_theta) && rope_theta > 0, "rope_theta must be finite and greater than 0, got " + std::to_string(rope_theta));
  need(std::is_sorted(dense_layers.begin(), dense_layers.end()) &&
           std::adjacent_find(dense_layers.begin(), dense_layers.end()) == dense_layers.end() &&
           (dense_layers.empty() || (dense_layers.front() >= 0 && dense_layers.back() < num_layers)),
       "dense layers must be distinct layer indices");
  need(std::is_sorted(full_attention_layers.begin(), full_attention_layers.end()) &&
           (full_attention_layers.empty() || (full_attention_layers.front() >= 0 && full_attention_layers.back() < num_layers)),
       "full-attention layers must be sorted layer indices");
  need(num_moe_layers() >= 1, "every layer is dense: a model without experts is not an MoE model");
  need(dense_layers.empty() || dense_intermediate_size > 0, "the dense layers' intermediate_size must be greater than 0");
  need(qk_norm.empty() || qk_norm == "head" || qk_norm == "full", "qk_norm must be head, full or empty");
  need(qk_norm != "full" || num_heads * head_dim == hidden_size,
       "OLMoE's q/k norms span hidden_size, so num_attention_heads x head_dim must equal it");
  need(std::isfinite(clip_qkv) && clip_qkv >= 0, "clip_qkv must be finite and at least 0");
  need(rotary_dim >= 0 && rotary_dim <= head_dim && rotary_dim % 2 == 0,
       "the rotary dims (partial_rotary_factor x head_dim) must be even and at most head_dim");
  need(scoring_func == "softmax" || scoring_func == "sigmoid", "scoring_func must be softmax or sigmoid");
  need(n_group >= 1 && num_experts % n_group == 0, "n_group (" + std::to_string(n_group) +
                                                       ") must divide the routed experts (" +
                                                       std::to_string(num_experts) + ")");
  need(n_group == 1 || num_experts / n_group >= 2, "a group of experts must hold at least 2 (its two best score it)");
  need(topk_group >= 1 && topk_group <= n_group, "topk_group must be in 1..n_group");
  need(top_k <= topk_group * (num_experts / n_group), "num_experts_per_tok must fit in the topk_group groups chosen");
  need(std::isfinite(routed_scaling_factor) && routed_scaling_factor > 0,
       "routed_scaling_factor must be finite and greater than 0");
  need(nextn_layers >= 0, "num_nextn_predict_layers must be at least 0");
  need(!mxfp4_experts || family_of(model_type).tensors.fused_experts,
       "MXFP4 experts (quantization_config mxfp4) are read from fused experts, as gpt-oss stores them");
  need(!mxfp4_experts || (hidden_size % 32 == 0 && intermediate_size % 32 == 0),
       "MXFP4 experts (quantization_config mxfp4) need hidden_size and intermediate_size multiples of 32, got " +
           std::to_string(hidden_size) + " and " + std::to_string(intermediate_size));
  if (mla()) {
    need(kv_lora_rank > 0 && q_lora_rank >= 0 && v_head_dim > 0, "kv_lora_rank, q_lora_rank and v_head_dim must be "
                                                                 "at least 1, 0 and 1");
    need(rotary_dim > 0 && rotary_dim < head_dim, "qk_rope_head_dim must be at least 2 and qk_nope_head_dim at least 1");
    need(num_kv_heads == num_heads, "MLA decompresses keys and values for every head: num_key_value_heads = heads");
  }
}

MoeConfig config_from_json(const nlohmann::json& j, const std::string& origin) {
  if (!j.is_object()) FERRY_THROW(FormatError, "config '", origin, "': expected a JSON object");
  MoeConfig c;
  const std::string model_type = config_get_or<std::string>(j, "model_type", c.model_type, origin);
  const ModelFamily* family = find_family(model_type);
  if (family == nullptr) {
    std::string known;
    for (const std::string& name : model_family_names()) known += (known.empty() ? "" : ", ") + name;
    FERRY_THROW(FormatError, "config '", origin, "': model_type '", model_type, "' is not supported (", known, ")");
  }
  c.model_type = family->name;  // an alias reads as its family
  if (model_type != family->name) c.model_alias = model_type;
  refuse_unimplemented(j, *family, origin);
  c.vocab_size = config_require_int(j, "vocab_size", origin);
  c.hidden_size = config_require_int(j, "hidden_size", origin);
  c.num_layers = config_require_int(j, "num_hidden_layers", origin);
  if (c.num_layers > kMaxLayers)
    FERRY_THROW(FormatError, "config '", origin, "': num_hidden_layers = ", c.num_layers, " exceeds ferry's limit of ",
                kMaxLayers);
  c.num_heads = config_require_int(j, "num_attention_heads", origin);
  c.num_kv_heads = config_get_or<int>(j, "num_key_value_heads", c.num_heads, origin);
  c.head_dim = config_get_or<int>(j, "head_dim", c.num_heads > 0 ? c.hidden_size / c.num_heads : 0, origin);
  c.top_k = config_require_int(j, "num_experts_per_tok", origin);
  c.norm_topk_prob = config_get_or<bool>(j, "norm_topk_prob", family->defaults.norm_topk_prob, origin);
  // The defaults are those of HF's config classes (ModelFamily::defaults).
  c.rms_norm_eps = config_get_or<double>(j, "rms_norm_eps", family->defaults.rms_norm_eps, origin);
  c.rope_theta = config_get_or<double>(j, "rope_theta", family->defaults.rope_theta, origin);
  if (j.contains("rope_parameters") && j["rope_parameters"].is_object() && j["rope_parameters"].contains("rope_theta"))
    c.rope_theta = config_get_or<double>(j["rope_parameters"], "rope_theta", c.rope_theta, origin);  // newer layout
  c.max_position_embeddings =
      config_get_or<int>(j, "max_position_embeddings", family->defaults.max_position_embeddings, origin);
  c.rope_scaling = parse_rope_scaling(j, origin);
  c.hidden_act = config_get_or<std::string>(j, "hidden_act", "silu", origin);
  c.tie_word_embeddings = config_get_or<bool>(j, "tie_word_embeddings", false, origin);
  c.tokenizer = config_get_or<std::string>(j, "ferry_tokenizer", "", origin);
  // The family's own keys: expert counts and widths, shared experts, dense layers, attention
  // biases and norms, sliding windows.
  family->read(j, c, origin);
  if (c.rope_scaling.type == "yarn" && !c.mla() && !family->yarn_attention)
    FERRY_THROW(FormatError, "config '", origin, "': rope_scaling yarn is implemented as DeepSeek's latent attention "
                "applies it (its softmax scale), not for model_type '", c.model_type, "'");
  c.validate(origin);
  return c;
}

MoeConfig load_config(const std::string& dir_or_file) {
  std::string path = dir_or_file;
  if (std::filesystem::is_directory(path)) {
    path = (std::filesystem::path(path) / "config.json").string();
  } else if (std::filesystem::is_regular_file(path) && std::filesystem::path(path).extension() != ".json") {
    return gguf_config(quant::GgufFile::open(path));  // a model file (Checkpoint::open reads it the same way)
  }
  require_regular_file(path, "model config");
  std::ifstream in(path);
  if (!in) FERRY_THROW(IoError, "cannot open model config '", path, "'");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  require_json_depth(text, kMaxJsonDepthFile, "config '" + path + "'");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    FERRY_THROW(FormatError, "config '", path, "' is not valid JSON: ", e.what());
  }
  return config_from_json(j, path);
}

nlohmann::json config_to_json(const MoeConfig& c) {
  const ModelFamily& family = family_of(c.model_type);
  nlohmann::json j = {{"architectures", {family.hf_architecture}},
                      {"model_type", c.declared_model_type()},
                      {"vocab_size", c.vocab_size},
                      {"hidden_size", c.hidden_size},
                      {"intermediate_size", c.intermediate_size},
                      {"num_hidden_layers", c.num_layers},
                      {"num_attention_heads", c.num_heads},
                      {"num_key_value_heads", c.num_kv_heads},
                      {"head_dim", c.head_dim},
                      {"num_experts_per_tok", c.top_k},
                      {"rms_norm_eps", c.rms_norm_eps},
                      {"rope_theta", c.rope_theta},
                      {"max_position_embeddings", c.max_position_embeddings},
                      {"tie_word_embeddings", c.tie_word_embeddings}};
  if (c.sliding_window > 0) j["sliding_window"] = c.sliding_window;
  family.write(c, j);
  if (c.clip_qkv > 0) j["clip_qkv"] = c.clip_qkv;
  if (!c.tokenizer.empty()) j["ferry_tokenizer"] = c.tokenizer;
  if (c.hidden_act != "silu") j["hidden_act"] = c.hidden_act;
  const RopeScaling& s = c.rope_scaling;
  if (s.type == "linear") j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", s.factor}};
  if (s.type == "llama3")
    j["rope_scaling"] = {{"rope_type", "llama3"},
                         {"factor", s.factor},
                         {"low_freq_factor", s.low_freq_factor},
                         {"high_freq_factor", s.high_freq_factor},
                         {"original_max_position_embeddings", s.original_max_position_embeddings}};
  if (s.type == "yarn")
    j["rope_scaling"] = {{"type", "yarn"},
                         {"factor", s.factor},
                         {"original_max_position_embeddings", s.original_max_position_embeddings},
                         {"beta_fast", s.beta_fast},
                         {"beta_slow", s.beta_slow},
                         {"mscale", s.mscale},
                         {"mscale_all_dim", s.mscale_all_dim}};
  if (s.type == "yarn" && !s.truncate) j["rope_scaling"]["truncate"] = false;
  return j;
}

}  // namespace ferry::moe
