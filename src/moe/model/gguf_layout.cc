#include "core/json_depth.h"
#include "moe/model/gguf_layout.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "moe/model/config_json.h"
#include "moe/model/family.h"

namespace ferry::moe {

using quant::GgufType;
using quant::GgufValue;

// ---------------------------------------------------------------------------------------------
// GgufKeys

void GgufKeys::set(const std::string& key, GgufValue value) {
  for (auto& [k, v] : entries_)
    if (k == key) {
      v = std::move(value);
      return;
    }
  entries_.emplace_back(key, std::move(value));
}

void GgufKeys::set_u32(const std::string& key, std::int64_t value) {
  FERRY_REQUIRE(value >= 0 && value <= 0xFFFFFFFFll, "GGUF key '", key, "': ", value, " is not a u32");
  GgufValue v;
  v.type = GgufType::kU32;
  v.i = value;
  set(key, std::move(v));
}

void GgufKeys::set_f32(const std::string& key, double value) {
  GgufValue v;
  v.type = GgufType::kF32;
  v.f = static_cast<float>(value);
  set(key, std::move(v));
}

void GgufKeys::set_bool(const std::string& key, bool value) {
  GgufValue v;
  v.type = GgufType::kBool;
  v.b = value;
  set(key, std::move(v));
}

void GgufKeys::set_string(const std::string& key, std::string value) {
  GgufValue v;
  v.type = GgufType::kString;
  v.s = std::move(value);
  set(key, std::move(v));
}

void GgufKeys::set_strings(const std::string& key, std::vector<std::string> values) {
  GgufValue v;
  v.type = GgufType::kArray;
  v.element_type = GgufType::kString;
  v.strings = std::move(values);
  set(key, std::move(v));
}

void GgufKeys::set_f32s(const std::string& key, const std::vector<float>& values) {
  GgufValue v;
  v.type = GgufType::kArray;
  v.element_type = GgufType::kF32;
  v.numbers.assign(values.begin(), values.end());
  set(key, std::move(v));
}

void GgufKeys::set_i32s(const std::string& key, const std::vector<std::int32_t>& values) {
  GgufValue v;
  v.type = GgufType::kArray;
  v.element_type = GgufType::kI32;
  v.numbers.assign(values.begin(), values.end());
  set(key, std::move(v));
}

void GgufKeys::erase(const std::string& key) {
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(), [&](const auto& e) { return e.first == key; }),
                 entries_.end());
}

const GgufValue* GgufKeys::find(std::string_view key) const {
  for (const auto& [k, v] : entries_)
    if (k == key) return &v;
  return nullptr;
}

// ---------------------------------------------------------------------------------------------
// Tensors

namespace {

// The names every family shares (the converter's tensor_mapping.py for these HF names).
const std::vector<std::pair<std::string, std::string>>& common_tensor_names() {
  static const std::vector<std::pair<std::string, std::string>> names = {
      {"model.embed_tokens.weight", "token_embd.weight"},
      {"model.norm.weight", "output_norm.weight"},
      {"lm_head.weight", "output.weight"},
      {"model.layers.{l}.input_layernorm.weight", "blk.{l}.attn_norm.weight"},
      {"model.layers.{l}.self_attn.q_proj.weight", "blk.{l}.attn_q.weight"},
      {"model.layers.{l}.self_attn.k_proj.weight", "blk.{l}.attn_k.weight"},
      {"model.layers.{l}.self_attn.v_proj.weight", "blk.{l}.attn_v.weight"},
      {"model.layers.{l}.self_attn.o_proj.weight", "blk.{l}.attn_output.weight"},
      {"model.layers.{l}.self_attn.q_proj.bias", "blk.{l}.attn_q.bias"},
      {"model.layers.{l}.self_attn.k_proj.bias", "blk.{l}.attn_k.bias"},
      {"model.layers.{l}.self_attn.v_proj.bias", "blk.{l}.attn_v.bias"},
      {"model.layers.{l}.self_attn.o_proj.bias", "blk.{l}.attn_output.bias"},
      {"model.layers.{l}.self_attn.q_norm.weight", "blk.{l}.attn_q_norm.weight"},
      {"model.layers.{l}.self_attn.k_norm.weight", "blk.{l}.attn_k_norm.weight"},
      {"model.layers.{l}.self_attn.sinks", "blk.{l}.attn_sinks.weight"},  // gpt-oss
      // MLA (DeepSeek-V2/V3); k_b_proj and v_b_proj are kv_b_proj's parts (split_from)
      {"model.layers.{l}.self_attn.q_a_proj.weight", "blk.{l}.attn_q_a.weight"},
      {"model.layers.{l}.self_attn.q_a_layernorm.weight", "blk.{l}.attn_q_a_norm.weight"},
      {"model.layers.{l}.self_attn.q_b_proj.weight", "blk.{l}.attn_q_b.weight"},
      {"model.layers.{l}.self_attn.kv_a_proj_with_mqa.weight", "blk.{l}.attn_kv_a_mqa.weight"},
      {"model.layers.{l}.self_attn.kv_a_layernorm.weight", "blk.{l}.attn_kv_a_norm.weight"},
      {"model.layers.{l}.self_attn.k_b_proj.weight", "blk.{l}.attn_k_b.weight"},
      {"model.layers.{l}.self_attn.v_b_proj.weight", "blk.{l}.attn_v_b.weight"},
  };
  return names;
}

// The MLP tensors, named as the family's HF modeling code names them (ModelFamily::tensors, the
// names TensorNames reads): router, routed experts (stacked over "{e}"), shared expert and its gate,
// a dense layer's MLP. A tensor the model does not have is dropped by role_shape().
std::vector<std::pair<std::string, std::string>> mlp_tensor_names(const FamilyTensorNames& n) {
  const std::string m = "model.layers.{l}." + n.moe_module;
  std::vector<std::pair<std::string, std::string>> names = {
      {m + n.router + ".weight", "blk.{l}.ffn_gate_inp.weight"},
      {m + n.router + ".bias", "blk.{l}.ffn_gate_inp.bias"},
      {m + "gate.e_score_correction_bias", "blk.{l}.exp_probs_b.bias"},
      {m + "shared_expert_gate.weight", "blk.{l}.ffn_gate_inp_shexp.weight"}};
  for (const auto& [proj, role] : {std::pair{n.gate, "gate"}, {n.up, "up"}, {n.down, "down"}}) {
    names.push_back({m + "experts.{e}." + proj + ".weight", std::string("blk.{l}.ffn_") + role + "_exps.weight"});
    names.push_back({m + "experts." + proj + ".bias", std::string("blk.{l}.ffn_") + role + "_exps.bias"});  // [E, rows]
    names.push_back({m + n.shared_expert + proj + ".weight", std::string("blk.{l}.ffn_") + role + "_shexp.weight"});
    names.push_back({m + proj + ".weight", std::string("blk.{l}.ffn_") + role + ".weight"});
  }
  return names;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
  return s;
}

// The HF shape (row-major, one expert's for stacked tensors) of a GGUF tensor role in `layer`,
// or empty when a model of `c` has no such tensor there. `role` is the GGUF name without "blk.N.".
std::vector<std::int64_t> role_shape(const std::string& role, const MoeConfig& c, int layer) {
  const std::int64_t H = c.hidden_size, V = c.vocab_size, D = c.head_dim, Q = std::int64_t{c.num_heads} * D,
                     KV = std::int64_t{c.num_kv_heads} * D, E = c.num_experts, I = c.intermediate_size,
                     S = c.shared_expert_intermediate_size, F = c.dense_intermediate_size;
  const bool moe = layer >= 0 && c.moe_layer(layer) >= 0;
  const bool dense = layer >= 0 && !moe;
  if (c.mla()) {
    const std::int64_t L = c.kv_lora_rank, Qr = c.q_lora_rank, R = c.rotary_dims(), nh = c.num_heads;
    auto mla = [](bool has, std::vector<std::int64_t> shape) { return has ? shape : std::vector<std::int64_t>{}; };
    if (role == "attn_q.weight") return mla(Qr == 0, {Q, H});
    if (role == "attn_k.weight" || role == "attn_v.weight") return {};
    if (role == "attn_output.weight") return {H, nh * c.v_head_dim};
    if (role == "attn_q_a.weight") return mla(Qr > 0, {Qr, H});
    if (role == "attn_q_a_norm.weight") return mla(Qr > 0, {Qr});
    if (role == "attn_q_b.weight") return mla(Qr > 0, {Q, Qr});
    if (role == "attn_kv_a_mqa.weight") return {L + R, H};
    if (role == "attn_kv_a_norm.weight") return {L};
    if (role == "attn_k_b.weight") return {nh * L, D - R};  // 3-D in the file: gguf_tensor_plan
    if (role == "attn_v_b.weight") return {nh * c.v_head_dim, L};
  } else if (role.rfind("attn_q_a", 0) == 0 || role.rfind("attn_q_b", 0) == 0 || role.rfind("attn_kv_a", 0) == 0 ||
             role == "attn_k_b.weight" || role == "attn_v_b.weight") {
    return {};
  }
  if (role == "token_embd.weight") return {V, H};
  if (role == "output_norm.weight") return {H};
  if (role == "output.weight") return c.tie_word_embeddings ? std::vector<std::int64_t>{} : std::vector<std::int64_t>{V, H};
  if (role == "attn_norm.weight" || role == "ffn_norm.weight" || role == "post_attention_norm.weight") return {H};
  if (role == "attn_q.weight") return {Q, H};
  if (role == "attn_k.weight" || role == "attn_v.weight") return {KV, H};
  if (role == "attn_output.weight") return {H, Q};
  if (role == "attn_q.bias") return c.qkv_bias ? std::vector<std::int64_t>{Q} : std::vector<std::int64_t>{};
  if (role == "attn_k.bias" || role == "attn_v.bias")
    return c.qkv_bias ? std::vector<std::int64_t>{KV} : std::vector<std::int64_t>{};
  if (role == "attn_output.bias") return c.o_bias ? std::vector<std::int64_t>{H} : std::vector<std::int64_t>{};
  if (role == "attn_q_norm.weight" || role == "attn_k_norm.weight") {
    if (c.qk_norm.empty()) return {};
    if (c.qk_norm == "head") return {D};
    return {role == "attn_q_norm.weight" ? Q : KV};
  }
  if (role == "attn_sinks.weight") return c.attn_sinks ? std::vector<std::int64_t>{c.num_heads} : std::vector<std::int64_t>{};
  if (role == "ffn_gate_inp.weight") return moe ? std::vector<std::int64_t>{E, H} : std::vector<std::int64_t>{};
  if (role == "ffn_gate_inp.bias")
    return moe && c.router_logit_bias ? std::vector<std::int64_t>{E} : std::vector<std::int64_t>{};
  if (role == "ffn_gate_exps.bias" || role == "ffn_up_exps.bias")
    return moe && c.expert_bias ? std::vector<std::int64_t>{E, I} : std::vector<std::int64_t>{};
  if (role == "ffn_down_exps.bias") return moe && c.expert_bias ? std::vector<std::int64_t>{E, H} : std::vector<std::int64_t>{};
  if (role == "exp_probs_b.bias") return moe && c.router_bias ? std::vector<std::int64_t>{E} : std::vector<std::int64_t>{};
  if (role == "ffn_gate_exps.weight" || role == "ffn_up_exps.weight")
    return moe ? std::vector<std::int64_t>{I, H} : std::vector<std::int64_t>{};
  if (role == "ffn_down_exps.weight") return moe ? std::vector<std::int64_t>{H, I} : std::vector<std::int64_t>{};
  const bool shared = moe && S > 0;
  if (role == "ffn_gate_shexp.weight" || role == "ffn_up_shexp.weight")
    return shared ? std::vector<std::int64_t>{S, H} : std::vector<std::int64_t>{};
  if (role == "ffn_down_shexp.weight") return shared ? std::vector<std::int64_t>{H, S} : std::vector<std::int64_t>{};
  if (role == "ffn_gate_inp_shexp.weight")
    return shared && c.shared_expert_gate ? std::vector<std::int64_t>{1, H} : std::vector<std::int64_t>{};
  if (role == "ffn_gate.weight" || role == "ffn_up.weight")
    return dense ? std::vector<std::int64_t>{F, H} : std::vector<std::int64_t>{};
  if (role == "ffn_down.weight") return dense ? std::vector<std::int64_t>{H, F} : std::vector<std::int64_t>{};
  FERRY_THROW(InternalError, "GGUF tensor role '", role, "' has no shape rule");
}

}  // namespace

std::vector<GgufTensorPlan> gguf_tensor_plan(const MoeConfig& c) {
  const ModelFamily& family = family_of(c.model_type);
  FERRY_REQUIRE(!family.gguf_architecture.empty(), "model family '", family.name, "' has no GGUF layout");
  std::vector<std::pair<std::string, std::string>> names = common_tensor_names();
  names.push_back({"model.layers.{l}.post_attention_layernorm.weight", "blk.{l}." + family.gguf_ffn_norm + ".weight"});
  const auto mlp = mlp_tensor_names(family.tensors);
  names.insert(names.end(), mlp.begin(), mlp.end());
  std::vector<GgufTensorPlan> plan;
  for (const auto& [hf, gguf] : names) {
    const bool per_layer = gguf.find("{l}") != std::string::npos;
    const bool stacked = hf.find("{e}") != std::string::npos;
    for (int l = per_layer ? 0 : -1; l < (per_layer ? c.num_layers : 0); ++l) {
      const std::string layer = std::to_string(l);
      const std::string role = per_layer ? gguf.substr(gguf.find("{l}") + 4) : gguf;
      const std::vector<std::int64_t> shape = role_shape(role, c, l);
      if (shape.empty()) continue;
      GgufTensorPlan t;
      t.name = replace_all(gguf, "{l}", layer);
      t.layer = l;
      t.hf_shape = shape;
      t.stacked = stacked;
      const std::string hf_name = replace_all(hf, "{l}", layer);
      if (stacked) {
        for (int e = 0; e < c.num_experts; ++e) t.hf_names.push_back(replace_all(hf_name, "{e}", std::to_string(e)));
      } else {
        t.hf_names.push_back(hf_name);
      }
      for (auto d = shape.rbegin(); d != shape.rend(); ++d) t.dims.push_back(static_cast<std::uint64_t>(*d));
      if (stacked) t.dims.push_back(static_cast<std::uint64_t>(c.num_experts));
      if (role == "attn_k_b.weight" || role == "attn_v_b.weight") {  // per head: [heads, rows, cols]
        t.split_from = replace_all("model.layers.{l}.self_attn.kv_b_proj.weight", "{l}", layer);
        t.dims = {static_cast<std::uint64_t>(shape[1]), static_cast<std::uint64_t>(shape[0] / c.num_heads),
                  static_cast<std::uint64_t>(c.num_heads)};
      }
      if (family.gguf_permute_qk) {
        if (role == "attn_q.weight" || role == "attn_q.bias") t.permute_heads = c.num_heads;
        if (role == "attn_k.weight" || role == "attn_k.bias") t.permute_heads = c.num_kv_heads;
      }
      plan.push_back(std::move(t));
    }
  }
  std::stable_sort(plan.begin(), plan.end(),
                   [](const GgufTensorPlan& a, const GgufTensorPlan& b) { return quant::gguf_tensor_order(a.name, b.name); });
  return plan;
}

std::vector<std::int64_t> mla_kv_b_shape(const MoeConfig& c) {
  return {std::int64_t{c.num_heads} * (c.head_dim - c.rotary_dims() + c.v_head_dim), c.kv_lora_rank};
}

std::vector<float> mla_kv_b_part(const std::vector<float>& kv_b, const std::string& part, const MoeConfig& c) {
  const std::int64_t nh = c.num_heads, L = c.kv_lora_rank, nope = c.head_dim - c.rotary_dims(), V = c.v_head_dim;
  FERRY_REQUIRE(static_cast<std::int64_t>(kv_b.size()) == nh * (nope + V) * L, "kv_b_proj: ", kv_b.size(),
                " values, expected ", nh * (nope + V) * L);
  const bool key = part.find("k_b_proj") != std::string::npos;
  std::vector<float> out(static_cast<std::size_t>(nh * (key ? nope : V) * L));
  for (std::int64_t h = 0; h < nh; ++h) {
    const float* head = kv_b.data() + h * (nope + V) * L;  // rows: nope key rows, then V value rows
    if (key) {  // [nope, L] -> [L, nope]
      for (std::int64_t i = 0; i < nope; ++i)
        for (std::int64_t j = 0; j < L; ++j) out[(h * L + j) * nope + i] = head[i * L + j];
    } else {
      std::copy_n(head + nope * L, V * L, out.data() + h * V * L);
    }
  }
  return out;
}

bool gguf_nextn_tensor(std::string_view name, const MoeConfig& c) {
  if (c.nextn_layers == 0 || name.substr(0, 4) != "blk.") return false;
  const std::size_t dot = name.find('.', 4);
  if (dot == std::string_view::npos) return false;
  int layer = -1;
  const auto [end, ec] = std::from_chars(name.data() + 4, name.data() + dot, layer);
  return ec == std::errc() && end == name.data() + dot && layer >= c.num_layers && layer < c.num_layers + c.nextn_layers;
}

namespace {

// Moves row (h, s, i) of a (n_head, 2, half) row layout to (h, i, s), or back (`inverse`); a row
// is `row` elements of T.
template <typename T>
void permute_rows(std::span<const T> in, std::span<T> out, std::int64_t rows, std::int64_t row, int n_head,
                  bool inverse) {
  FERRY_REQUIRE(n_head > 0 && rows % (2 * n_head) == 0, "q/k permutation: ", rows, " rows are not ", n_head,
                " heads of two halves");
  FERRY_REQUIRE(static_cast<std::int64_t>(in.size()) == rows * row && out.size() == in.size(),
                "q/k permutation: buffers of ", in.size(), " and ", out.size(), " values for ", rows, " x ", row);
  const std::int64_t half = rows / n_head / 2;
  for (std::int64_t h = 0; h < n_head; ++h)
    for (std::int64_t s = 0; s < 2; ++s)
      for (std::int64_t i = 0; i < half; ++i) {
        const std::int64_t hf_row = (h * 2 + s) * half + i;
        const std::int64_t gguf_row = (h * half + i) * 2 + s;
        const std::int64_t from = inverse ? gguf_row : hf_row, to = inverse ? hf_row : gguf_row;
        std::copy_n(in.data() + from * row, row, out.data() + to * row);
      }
}

}  // namespace

void gguf_permute_rows(std::span<const float> in, std::span<float> out, std::int64_t rows, std::int64_t cols,
                       int n_head) {
  permute_rows(in, out, rows, cols, n_head, false);
}

void gguf_unpermute_rows(std::span<const float> in, std::span<float> out, std::int64_t rows, std::int64_t cols,
                         int n_head) {
  permute_rows(in, out, rows, cols, n_head, true);
}

void gguf_unpermute_row_bytes(std::span<const std::byte> in, std::span<std::byte> out, std::int64_t rows,
                              std::int64_t row_bytes, int n_head) {
  permute_rows(in, out, rows, row_bytes, n_head, true);
}

// ---------------------------------------------------------------------------------------------
// Metadata

GgufKeys gguf_model_metadata(const MoeConfig& c, const nlohmann::json& j, const std::string& name) {
  const ModelFamily& family = family_of(c.model_type);
  FERRY_REQUIRE(!family.gguf_architecture.empty(), "model family '", family.name, "' has no GGUF layout");
  GgufKeys k(family.gguf_architecture);
  k.set_string("general.architecture", family.gguf_architecture);
  k.set_string("general.type", "model");
  k.set_string("general.name", name);
  // Model.set_gguf_parameters: a key when config.json has it (null counts as absent).
  auto u32_if = [&](const char* hf, const std::string& key) {
    if (config_has(j, hf)) k.set_u32(key, j[hf].get<std::int64_t>());
  };
  auto f32_if = [&](const char* hf, const std::string& key) {
    if (config_has(j, hf)) k.set_f32(key, j[hf].get<double>());
  };
  k.set_u32(k.arch("block_count"), c.num_layers);
  u32_if("max_position_embeddings", k.arch("context_length"));
  k.set_u32(k.arch("embedding_length"), c.hidden_size);
  u32_if("intermediate_size", k.arch("feed_forward_length"));
  k.set_u32(k.arch("attention.head_count"), c.num_heads);
  u32_if("num_key_value_heads", k.arch("attention.head_count_kv"));
  f32_if("rope_theta", k.arch("rope.freq_base"));
  f32_if("rms_norm_eps", k.arch("attention.layer_norm_rms_epsilon"));
  u32_if("num_local_experts", k.arch("expert_count"));
  u32_if("num_experts_per_tok", k.arch("expert_used_count"));
  if (config_has(j, "head_dim")) {
    k.set_u32(k.arch("attention.key_length"), j["head_dim"].get<std::int64_t>());
    k.set_u32(k.arch("attention.value_length"), j["head_dim"].get<std::int64_t>());
  }
  if (family.gguf_metadata) family.gguf_metadata(c, j, k);
  return k;
}

void gguf_file_type_metadata(GgufKeys& k, quant::LlamaFileType file_type) {
  k.erase("general.quantization_version");
  k.erase("general.file_type");
  k.set_u32("general.quantization_version", 2);  // GGML_QNT_VERSION
  k.set_u32("general.file_type", static_cast<std::int64_t>(file_type));
}

namespace {

// DIR/NAME as JSON; null when there is no such file or no directory (`dir` empty: a model
// written without tokenizer files, write_random_gguf).
nlohmann::json read_json_if_present(const std::string& dir, const char* name) {
  if (dir.empty()) return nlohmann::json();
  const std::filesystem::path path = std::filesystem::path(dir) / name;
  if (!std::filesystem::is_regular_file(path)) return nlohmann::json();
  std::ifstream in(path);
  if (!in) FERRY_THROW(IoError, "cannot open '", path.string(), "'");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  require_json_depth(text, kMaxJsonDepthFile, "'" + path.string() + "'");
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    FERRY_THROW(FormatError, "'", path.string(), "' is not valid JSON: ", e.what());
  }
}

// gguf-py's SpecialVocab (vocab.py): special token ids from tokenizer_config.json's
// "<type>_token" (looked up by content among tokenizer.json's added tokens), then config.json's
// "<type>_token_id"; add_bos_token/add_eos_token and chat_template from tokenizer_config.json.
void add_special_vocab(GgufKeys& k, const std::string& dir, const nlohmann::json& hf_config, std::int64_t n_vocab) {
  static const std::vector<std::pair<std::string, const char*>> kTypes = {
      {"bos", "tokenizer.ggml.bos_token_id"},      {"eos", "tokenizer.ggml.eos_token_id"},
      {"unk", "tokenizer.ggml.unknown_token_id"},  {"sep", "tokenizer.ggml.seperator_token_id"},
      {"pad", "tokenizer.ggml.padding_token_id"},  {"cls", nullptr},  // gguf-py has no cls key
      {"mask", "tokenizer.ggml.mask_token_id"}};
  std::vector<std::pair<std::string, std::int64_t>> ids;  // in the order they are found
  auto set_id = [&](const std::string& type, const nlohmann::json& id) {
    if (!id.is_number_integer()) return;
    const std::int64_t v = id.get<std::int64_t>();
    FERRY_REQUIRE(v >= 0, "special token ", type, " has id ", v);
    if (n_vocab >= 0 && v >= n_vocab) return;
    for (const auto& [t, _] : ids)
      if (t == type) return;
    ids.emplace_back(type, v);
  };
  std::vector<std::pair<std::string, bool>> add_flags;
  std::string chat_template;
  const nlohmann::json tokenizer = read_json_if_present(dir, "tokenizer.json");
  const nlohmann::json config = read_json_if_present(dir, "tokenizer_config.json");
  if (config.is_object()) {
    if (config.contains("chat_template") && config["chat_template"].is_string())
      chat_template = config["chat_template"].get<std::string>();
    for (const auto& [type, key] : kTypes) {
      const std::string add = "add_" + type + "_token";
      if (config.contains(add) && config[add].is_boolean()) add_flags.emplace_back(type, config[add].get<bool>());
      const std::string entry_key = type + "_token";
      if (!config.contains(entry_key)) continue;
      const nlohmann::json& entry = config[entry_key];
      std::string content;
      if (entry.is_string()) {
        content = entry.get<std::string>();
      } else if (entry.is_object() && entry.contains("content") && entry["content"].is_string()) {
        content = entry["content"].get<std::string>();
      } else {
        continue;
      }
      if (tokenizer.is_object() && tokenizer.contains("added_tokens") && tokenizer["added_tokens"].is_array())
        for (const auto& t : tokenizer["added_tokens"])
          if (t.is_object() && t.value("content", std::string()) == content && t.contains("id")) {
            set_id(type, t["id"]);
            break;
          }
    }
  }
  for (const auto& [type, key] : kTypes)
    if (hf_config.contains(type + "_token_id")) set_id(type, hf_config[type + "_token_id"]);
  for (const auto& [type, id] : ids)
    for (const auto& [t, key] : kTypes)
      if (t == type && key) k.set_u32(key, id);
  for (const auto& [type, value] : add_flags)
    if (type == "bos" || type == "eos") k.set_bool("tokenizer.ggml.add_" + type + "_token", value);
  if (!chat_template.empty()) k.set_string("tokenizer.chat_template", chat_template);
}

std::vector<std::int32_t> type_ids(const std::vector<TokenType>& types) {
  std::vector<std::int32_t> out;
  out.reserve(types.size());
  for (TokenType t : types) out.push_back(static_cast<std::int32_t>(t));
  return out;
}

}  // namespace

void gguf_tokenizer_metadata(GgufKeys& k, const TokenizerVocab& vocab_in, const MoeConfig& c, const std::string& dir,
                             const nlohmann::json& hf_config) {
  TokenizerVocab v = vocab_in;
  const auto n = static_cast<std::size_t>(c.vocab_size);
  if (v.tokens.size() > n)
    FERRY_THROW(FormatError, "model '", dir, "': its tokenizer has ", v.tokens.size(),
                " tokens, more than the embedding's vocab_size ", c.vocab_size);
  const bool sp = v.kind == TokenizerVocab::Kind::kSentencePiece;
  if (sp) v.scores.resize(v.tokens.size(), 0.0f);
  for (std::size_t id = v.tokens.size(); id < n; ++id) {  // the converter's "[PAD<id>]", unused
    v.tokens.push_back("[PAD" + std::to_string(id) + "]");
    v.types.push_back(TokenType::kUnused);
    if (sp) v.scores.push_back(-10000.0f);
  }
  switch (v.kind) {
    case TokenizerVocab::Kind::kSentencePiece: {
      // _create_vocab_sentencepiece: added_tokens.json and tokenizer_config.json's
      // added_tokens_decoder override pieces (score -1000; control when special).
      const nlohmann::json added = read_json_if_present(dir, "added_tokens.json");
      if (added.is_object())
        for (auto it = added.begin(); it != added.end(); ++it) {
          if (!it.value().is_number_integer()) continue;
          const auto id = it.value().get<std::int64_t>();
          if (id < 0 || id >= static_cast<std::int64_t>(n)) continue;
          v.tokens[id] = it.key();
          v.scores[id] = -1000.0f;
          v.types[id] = TokenType::kUserDefined;
        }
      const nlohmann::json config = read_json_if_present(dir, "tokenizer_config.json");
      if (config.is_object() && config.contains("added_tokens_decoder") && config["added_tokens_decoder"].is_object())
        for (auto it = config["added_tokens_decoder"].begin(); it != config["added_tokens_decoder"].end(); ++it) {
          if (it.key().empty() || it.key().find_first_not_of("0123456789") != std::string::npos) continue;
          const std::int64_t id = std::stoll(it.key());
          const nlohmann::json& t = it.value();
          if (id < 0 || id >= static_cast<std::int64_t>(n) || !t.contains("content") || !t["content"].is_string()) continue;
          std::string content = t["content"].get<std::string>();
          const bool special = t.value("special", false) || (content.rfind("<|", 0) == 0 && content.size() >= 4 &&
                                                             content.compare(content.size() - 2, 2, "|>") == 0);
          if (!special) content = replace_all(content, "\xE2\x96\x81", " ");
          v.types[id] = special ? TokenType::kControl : TokenType::kUserDefined;
          v.scores[id] = -1000.0f;
          v.tokens[id] = content;
        }
      k.set_string("tokenizer.ggml.model", "llama");
      k.set_string("tokenizer.ggml.pre", "default");
      k.set_strings("tokenizer.ggml.tokens", v.tokens);
      k.set_f32s("tokenizer.ggml.scores", v.scores);
      k.set_i32s("tokenizer.ggml.token_type", type_ids(v.types));
      add_special_vocab(k, dir, hf_config, static_cast<std::int64_t>(n));
      // LlamaModel.set_vocab: tokenizer_config.json's add_prefix_space.
      const nlohmann::json& cfg = config;
      if (cfg.is_object() && cfg.contains("add_prefix_space") && cfg["add_prefix_space"].is_boolean())
        k.set_bool("tokenizer.ggml.add_space_prefix", cfg["add_prefix_space"].get<bool>());
      break;
    }
    case TokenizerVocab::Kind::kByteLevelBpe:
      k.set_string("tokenizer.ggml.model", "gpt2");
      k.set_string("tokenizer.ggml.pre", gguf_tokenizer_pre_of(c.declared_model_type()));
      k.set_strings("tokenizer.ggml.tokens", v.tokens);
      k.set_i32s("tokenizer.ggml.token_type", type_ids(v.types));
      if (!v.merges.empty()) k.set_strings("tokenizer.ggml.merges", v.merges);
      add_special_vocab(k, dir, hf_config, -1);
      break;
    case TokenizerVocab::Kind::kBytes:
      // ferry's byte vocabulary, which the converter has no path for: a byte-level BPE without
      // merges, so llama.cpp's tokenizer maps each byte to its own token as ferry's does.
      k.set_string("tokenizer.ggml.model", "gpt2");
      k.set_string("tokenizer.ggml.pre", "default");
      k.set_strings("tokenizer.ggml.tokens", v.tokens);
      k.set_i32s("tokenizer.ggml.token_type", type_ids(v.types));
      k.set_strings("tokenizer.ggml.merges", {});  // llama.cpp requires the key
      k.set_bool("tokenizer.ggml.add_bos_token", false);
      add_special_vocab(k, dir, hf_config, -1);
      break;
  }
}

void gguf_set_expert_groups(const MoeConfig& c, const nlohmann::json& j, GgufKeys& k) {
  for (const char* key : {"n_group", "topk_group"})
    FERRY_REQUIRE(c.n_group == 1 || config_has(j, key), "config ", key, ": absent, so ", c.n_group,
                  " groups come from the config class's defaults, which the converter does not write: give "
                  "n_group and topk_group in config.json");
  if (config_has(j, "n_group")) k.set_u32(k.arch("expert_group_count"), c.n_group);
  if (config_has(j, "topk_group")) k.set_u32(k.arch("expert_group_used_count"), c.topk_group);
}

void gguf_set_yarn(const MoeConfig& c, GgufKeys& k) {
  const RopeScaling& s = c.rope_scaling;
  if (s.type != "yarn") return;
  k.set_string(k.arch("rope.scaling.type"), "yarn");
  k.set_f32(k.arch("rope.scaling.factor"), s.factor);
  k.set_u32(k.arch("rope.scaling.original_context_length"), s.original_max_position_embeddings);
  k.set_f32(k.arch("rope.scaling.yarn_beta_fast"), s.beta_fast);
  k.set_f32(k.arch("rope.scaling.yarn_beta_slow"), s.beta_slow);
}

void gguf_refuse_rope_scaling(const MoeConfig& c, bool linear_written) {
  const ModelFamily& family = family_of(c.model_type);
  FERRY_REQUIRE(c.rope_scaling.type == "default" || (linear_written && c.rope_scaling.type == "linear"),
                "config rope_scaling ", c.rope_scaling.type, ": the converter writes no rope scaling for llama.cpp's ",
                family.gguf_architecture, " architecture");
}

std::vector<std::string> gguf_check_supported(const MoeConfig& c) {
  const ModelFamily& family = family_of(c.model_type);
  FERRY_REQUIRE(!family.gguf_architecture.empty(), "model family '", family.name, "' has no GGUF layout");
  FERRY_REQUIRE(c.rope_scaling.type != "llama3", "config rope_scaling llama3: ferry does not write its rope_freqs tensor");
  return family.gguf_check ? family.gguf_check(c) : std::vector<std::string>{};
}

}  // namespace ferry::moe
