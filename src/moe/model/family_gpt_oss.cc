// gpt-oss (HF transformers' GptOssConfig and modeling_gpt_oss.py; openai/gpt-oss-20b, -120b):
// num_local_experts experts of intermediate_size, all with biases, chosen by a router with a bias
// whose top-k logits are softmaxed (the same weights as a softmax over every expert renormalised
// over the chosen ones: norm_topk_prob); the experts' clamped SwiGLU, (clamp(up, ±limit) + 1) *
// g * sigmoid(1.702 g) with g = min(gate, limit); q/k/v/o biases (attention_bias); one learned
// logit per head, the attention sink, in every softmax's denominator; layer_types alternating
// sliding_attention (the last sliding_window positions) and full_attention; YaRN without
// truncation (rope_scaling truncate false). HF stores each layer's experts fused
// (mlp.experts.gate_up_proj [E, H, 2I], gate and up interleaved; down_proj [E, I, H]; biases
// likewise): ferry reads them apart (fused_experts.h), and the released checkpoints' MXFP4 experts
// (quantization_config mxfp4: *_blocks / *_scales) as MXFP4 blocks, without dequantizing them.
#include <algorithm>
#include <cmath>
#include <regex>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/excerpt.h"
#include "moe/model/config_json.h"
#include "moe/model/family.h"
#include "moe/model/gguf_layout.h"

namespace ferry::moe {
namespace {

constexpr double kSwigluLimit = 7.0, kSwigluAlpha = 1.702;  // HF's defaults; llama.cpp hard-codes both

// GptOssConfig's rope_parameters when config.json has none: YaRN stretching 4096 positions 32x.
RopeScaling gpt_oss_default_yarn() {
  RopeScaling s;
  s.type = "yarn";
  s.factor = 32;
  s.beta_fast = 32;
  s.beta_slow = 1;
  s.original_max_position_embeddings = 4096;
  s.truncate = false;
  return s;
}

// layer_types: HF's default alternates, sliding first.
void read_layer_types(const nlohmann::json& j, MoeConfig& c, const std::string& origin) {
  c.full_attention_layers.clear();
  if (!config_has(j, "layer_types")) {
    for (int l = 1; l < c.num_layers; l += 2) c.full_attention_layers.push_back(l);
    return;
  }
  const nlohmann::json& t = j["layer_types"];
  if (!t.is_array() || static_cast<int>(t.size()) != c.num_layers)
    config_refuse(j, "layer_types", "expected one entry per layer (num_hidden_layers)", origin);
  for (int l = 0; l < c.num_layers; ++l) {
    if (t[l] == "full_attention")
      c.full_attention_layers.push_back(l);
    else if (t[l] != "sliding_attention")
      config_refuse(j, "layer_types", "implemented: sliding_attention, full_attention", origin);
  }
}

// quantization_config as transformers' MXFP4 quantizer reads it: quant_method mxfp4 stores every
// expert module (GptOssExperts, model.layers.N.mlp.experts) in MXFP4 unless an entry of
// modules_to_not_convert matches its name (should_convert_module: a regular expression matched at
// the name's start); the released checkpoints list the attention, the router, the embedding and the
// head, which it never converts anyway. Whether the experts are MXFP4; another quant_method, or a
// list that keeps the experts in floats, is refused by name.
bool read_mxfp4_experts(const nlohmann::json& j, int num_layers, const std::string& origin) {
  if (!config_has(j, "quantization_config")) return false;
  const nlohmann::json& q = j["quantization_config"];
  auto refuse = [&](const std::string& why) { config_refuse(j, "quantization_config", why, origin); };
  const std::string method = q.is_object() && q.contains("quant_method") && q["quant_method"].is_string()
                                 ? q["quant_method"].get<std::string>()
                                 : "?";
  if (method != "mxfp4") refuse("quant_method '" + excerpt(method) + "' is not one ferry reads (mxfp4)");
  if (!q.contains("modules_to_not_convert") || q["modules_to_not_convert"].is_null()) return true;
  const nlohmann::json& keep = q["modules_to_not_convert"];
  if (!keep.is_array()) refuse("modules_to_not_convert must be a list of module names");
  for (const nlohmann::json& entry : keep) {
    if (!entry.is_string()) refuse("modules_to_not_convert must be a list of module names");
    const std::string pattern = entry.get<std::string>();
    std::regex re;
    try {
      re = std::regex(pattern);
    } catch (const std::regex_error&) {
      refuse("modules_to_not_convert '" + excerpt(pattern) + "' is not a pattern ferry reads");
    }
    for (int l = 0; l < num_layers; ++l) {
      const std::string experts = "model.layers." + std::to_string(l) + ".mlp.experts";
      if (std::regex_search(experts, re, std::regex_constants::match_continuous))
        refuse("modules_to_not_convert '" + excerpt(pattern) + "' keeps the experts (" + experts +
               ") out of MXFP4: ferry reads MXFP4 experts, or float ones without a quantization_config");
    }
  }
  return true;
}

}  // namespace

ModelFamily gpt_oss_family() {
  ModelFamily f;
  f.name = "gpt_oss";
  f.summary = "gpt-oss-20b / gpt-oss-120b (GptOssForCausalLM)";
  f.chat_template = "gpt-oss";  // harmony, as its chat_template.jinja renders it
  f.hf_architecture = "GptOssForCausalLM";
  f.defaults = {.rms_norm_eps = 1e-5, .rope_theta = 150000, .max_position_embeddings = 131072, .norm_topk_prob = true};
  f.config_keys = {"num_local_experts", "experts_per_token", "head_dim",     "sliding_window",       "layer_types",
                   "attention_bias",    "swiglu_limit",      "swiglu_alpha", "initial_context_length",
                   "quantization_config"};
  f.tensors.router = "router";
  f.tensors.fused_experts = true;
  f.has_sliding_layers = true;
  f.yarn_attention = true;
  f.read = [](const nlohmann::json& j, MoeConfig& c, const std::string& origin) {
    c.num_experts = config_require_int(j, "num_local_experts", origin);
    c.intermediate_size = config_require_int(j, "intermediate_size", origin);
    c.mxfp4_experts = read_mxfp4_experts(j, c.num_layers, origin);
    // OpenAI's own name of num_experts_per_tok (HF reads the latter): they must agree.
    if (config_has(j, "experts_per_token") && config_checked_int(j["experts_per_token"], "experts_per_token", origin) != c.top_k)
      config_refuse(j, "experts_per_token", "must equal num_experts_per_tok", origin);
    c.qkv_bias = c.o_bias = config_get_or<bool>(j, "attention_bias", true, origin);
    c.sliding_window = 0;
    if (!(j.contains("sliding_window") && j["sliding_window"].is_null())) {
      c.sliding_window = config_get_or<int>(j, "sliding_window", 128, origin);
      if (c.sliding_window <= 0) config_refuse(j, "sliding_window", "must be greater than 0 (or null: no window)", origin);
    }
    c.max_window_layers = 0;
    read_layer_types(j, c, origin);
    c.attn_sinks = true;
    c.router_logit_bias = true;
    c.expert_bias = true;
    c.norm_topk_prob = true;  // softmax over the top-k logits
    c.scoring_func = "softmax";
    c.swiglu_limit = config_get_or<double>(j, "swiglu_limit", kSwigluLimit, origin);
    c.swiglu_alpha = config_get_or<double>(j, "swiglu_alpha", kSwigluAlpha, origin);
    if (!(std::isfinite(c.swiglu_limit) && c.swiglu_limit > 0))
      config_refuse(j, "swiglu_limit", "must be finite and greater than 0", origin);
    if (!(std::isfinite(c.swiglu_alpha) && c.swiglu_alpha > 0))
      config_refuse(j, "swiglu_alpha", "must be finite and greater than 0", origin);
    if (!config_has(j, "rope_scaling") && !config_has(j, "rope_parameters")) c.rope_scaling = gpt_oss_default_yarn();
  };
  f.write = [](const MoeConfig& c, nlohmann::json& j) {
    j["num_local_experts"] = c.num_experts;
    j["attention_bias"] = c.qkv_bias;
    FERRY_REQUIRE(c.qkv_bias == c.o_bias, "gpt-oss's attention_bias covers q, k, v and o alike");
    nlohmann::json types = nlohmann::json::array();
    for (int l = 0; l < c.num_layers; ++l)
      types.push_back(std::binary_search(c.full_attention_layers.begin(), c.full_attention_layers.end(), l)
                          ? "full_attention"
                          : "sliding_attention");
    j["layer_types"] = types;
    if (c.sliding_window == 0) j["sliding_window"] = nullptr;
    j["swiglu_limit"] = c.swiglu_limit;
    if (c.swiglu_alpha != kSwigluAlpha) j["swiglu_alpha"] = c.swiglu_alpha;
    if (c.mxfp4_experts)  // as the released checkpoints write it
      j["quantization_config"] = {{"modules_to_not_convert", {"model.layers.*.self_attn", "model.layers.*.mlp.router",
                                                              "model.embed_tokens", "lm_head"}},
                                  {"quant_method", "mxfp4"}};
  };
  f.check_tiny = [](MoeConfig& c) {
    // As the released models: every bias, sinks, the clamped SwiGLU, YaRN without truncation;
    // unless given, a window of 8 positions (less than a test's prompt) in every other layer.
    c.qkv_bias = c.o_bias = true;
    c.attn_sinks = c.router_logit_bias = c.expert_bias = true;
    c.swiglu_limit = kSwigluLimit;
    if (c.sliding_window == 0) c.sliding_window = 8;
    c.full_attention_layers.clear();
    for (int l = 1; l < c.num_layers; l += 2) c.full_attention_layers.push_back(l);
    RopeScaling yarn = gpt_oss_default_yarn();
    yarn.original_max_position_embeddings = std::min(4096, c.max_position_embeddings);
    c.rope_scaling = yarn;
  };
  // GGUF (the converter's GptOssModel): gate_up_proj split into ffn_gate_exps and ffn_up_exps
  // (weights and biases, even and odd), post_attention_layernorm as blk.N.post_attention_norm, the
  // sinks as blk.N.attn_sinks.weight, the router's bias as blk.N.ffn_gate_inp.bias; llama.cpp's
  // NEOX rope (rows not permuted). llama.cpp reads the sliding layers from sliding_window_pattern
  // (2 when absent: every even layer), hard-codes the SwiGLU's 1.702 and 7, and always truncates
  // YaRN's correction range.
  f.gguf_architecture = "gpt-oss";
  f.gguf_ffn_norm = "post_attention_norm";
  f.gguf_tokenizer_pre = "gpt-4o";
  f.gguf_metadata = [](const MoeConfig& c, const nlohmann::json&, GgufKeys& k) {
    gguf_set_yarn(c, k);
    k.set_u32(k.arch("attention.sliding_window"), c.sliding_window);
    k.set_u32(k.arch("expert_feed_forward_length"), c.intermediate_size);
  };
  f.gguf_read_metadata = [](GgufArchReader& r, nlohmann::json& j) {
    r.take_int("expert_count", j, "num_local_experts", /*required=*/true);
    r.take_int("expert_feed_forward_length", j, "intermediate_size", /*required=*/true);
    r.take_int("attention.sliding_window", j, "sliding_window", /*required=*/true);
    const int layers = j["num_hidden_layers"].get<int>();
    int period = 2;
    if (const quant::GgufValue* p = r.take("attention.sliding_window_pattern")) {
      if (!p->is_integer() || p->i < 1) r.refuse("attention.sliding_window_pattern", "expected one integer of at least 1");
      period = static_cast<int>(p->i);
    }
    nlohmann::json types = nlohmann::json::array();  // llama.cpp's set_swa_pattern
    for (int l = 0; l < layers; ++l) types.push_back(l % period < period - 1 ? "sliding_attention" : "full_attention");
    j["layer_types"] = types;
    const std::string scaling = r.take_string("rope.scaling.type", "none");
    if (scaling == "yarn") {  // llama.cpp rounds the correction range out (ggml_rope_yarn_corr_dims)
      nlohmann::json y = {{"rope_type", "yarn"}, {"truncate", true}};
      r.take_yarn(y);
      j["rope_scaling"] = y;
    } else if (scaling == "none") {
      j["rope_scaling"] = {{"rope_type", "default"}};
    } else {
      r.refuse("rope.scaling.type", "implemented: none, yarn");
    }
    j["attention_bias"] = true;  // llama.cpp requires attn_output.bias; q/k/v's the converter always writes
  };
  f.gguf_check = [](const MoeConfig& c) {
    FERRY_REQUIRE(c.swiglu_limit == kSwigluLimit && c.swiglu_alpha == kSwigluAlpha, "config swiglu_limit ",
                  c.swiglu_limit, " / swiglu_alpha ", c.swiglu_alpha, ": llama.cpp's gpt-oss hard-codes 7 and 1.702");
    FERRY_REQUIRE(c.qkv_bias, "config attention_bias false: llama.cpp's gpt-oss needs the attention biases");
    FERRY_REQUIRE(c.sliding_window > 0, "config sliding_window null: llama.cpp's gpt-oss needs a window");
    for (int l = 0; l < c.num_layers; ++l)
      FERRY_REQUIRE(c.windowed(l) == (l % 2 == 0), "config layer_types: llama.cpp's gpt-oss windows the even layers only");
    if (c.rope_scaling.type != "yarn") gguf_refuse_rope_scaling(c, false);
    std::vector<std::string> notes;
    if (c.rope_scaling.type == "yarn" && !c.rope_scaling.truncate)
      notes.push_back("rope_scaling truncate false is not written: llama.cpp rounds YaRN's correction range out");
    return notes;
  };
  return f;
}

}  // namespace ferry::moe
