// A GGUF file's metadata read back as the config.json it was written from (gguf_layout.h): the
// inverse of gguf_model_metadata here, of each family's gguf_metadata in its own file.
#include <charconv>
#include <cstdlib>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/excerpt.h"
#include "moe/model/family.h"
#include "moe/model/gguf_layout.h"
#include "moe/tokenizer/gguf_tokenizer.h"

namespace ferry::moe {

using quant::GgufType;
using quant::GgufValue;

namespace {

std::string gguf_value_text(const GgufValue& v) {
  std::ostringstream s;
  if (v.type == GgufType::kString) {
    s << '"' << excerpt(v.s) << '"';
  } else if (v.type == GgufType::kBool) {
    s << (v.b ? "true" : "false");
  } else if (v.is_integer()) {
    s << v.i;
  } else if (v.type == GgufType::kF32 || v.type == GgufType::kF64) {
    s << v.f;
  } else {
    s << "an array of " << v.array_size();
  }
  return s.str();
}

}  // namespace

GgufArchReader::GgufArchReader(const quant::GgufFile& file, std::string arch) : file_(&file), arch_(std::move(arch)) {}

const GgufValue* GgufArchReader::take(std::string_view name) {
  std::string key = arch_ + "." + std::string(name);
  const GgufValue* v = file_->find(key);
  if (v) taken_.insert(std::move(key));
  return v;
}

void GgufArchReader::take_int(std::string_view name, nlohmann::json& hf, const char* hf_key, bool required) {
  const GgufValue* v = take(name);
  if (!v) {
    if (required)
      FERRY_THROW(FormatError, "GGUF '", file_->path(), "': key '", arch_, ".", name, "' is missing (config ", hf_key,
                  ")");
    return;
  }
  if (!v->is_integer() || v->i < 0) refuse(name, "expected an integer >= 0");
  hf[hf_key] = v->i;
}

void GgufArchReader::take_number(std::string_view name, nlohmann::json& hf, const char* hf_key) {
  const GgufValue* v = take(name);
  if (!v) return;
  if (!v->is_number()) refuse(name, "expected a number");
  if (v->is_integer()) {
    hf[hf_key] = static_cast<double>(v->i);
  } else if (v->type == GgufType::kF32) {
    // The shortest decimal that is this float, as config.json spelled it (1e-05, not
    // 9.999999747378752e-06): the converter wrote the config's double as an f32.
    char text[32];
    const auto end = std::to_chars(text, text + sizeof text, static_cast<float>(v->f)).ptr;
    hf[hf_key] = std::strtod(std::string(text, end).c_str(), nullptr);
  } else {
    hf[hf_key] = v->f;
  }
}

void GgufArchReader::take_equal(std::string_view name, std::int64_t expected, const std::string& what) {
  const GgufValue* v = take(name);
  if (!v) return;
  if (!v->is_integer() || v->i != expected) refuse(name, "ferry needs " + std::to_string(expected) + ", " + what);
}

std::string GgufArchReader::take_string(std::string_view name, const std::string& fallback) {
  const GgufValue* v = take(name);
  if (!v) return fallback;
  if (v->type != GgufType::kString) refuse(name, "expected a string");
  return v->s;
}

void GgufArchReader::refuse(std::string_view name, const std::string& why) const {
  const std::string key = arch_ + "." + std::string(name);
  const GgufValue* v = file_->find(key);
  FERRY_THROW(FormatError, "GGUF '", file_->path(), "': key '", excerpt(key), "' = ", v ? gguf_value_text(*v) : "(absent)",
              " is not implemented (", why, ")");
}

void GgufArchReader::take_nextn_layers(nlohmann::json& hf) {
  const GgufValue* nextn = take("nextn_predict_layers");
  if (nextn == nullptr) return;
  const std::int64_t layers = hf["num_hidden_layers"].get<std::int64_t>();
  if (!nextn->is_integer() || nextn->i < 0 || nextn->i >= layers)
    refuse("nextn_predict_layers", "must be at least 0 and fewer than block_count");
  hf["num_nextn_predict_layers"] = nextn->i;
  hf["num_hidden_layers"] = layers - nextn->i;  // block_count counts the MTP layers
}

void GgufArchReader::take_bool(std::string_view name, nlohmann::json& hf, const char* hf_key, bool fallback) {
  const GgufValue* v = take(name);
  if (v != nullptr && v->type != GgufType::kBool) refuse(name, "expected a bool");
  hf[hf_key] = v != nullptr ? v->b : fallback;
}

void GgufArchReader::take_yarn(nlohmann::json& yarn) {
  take_number("rope.scaling.factor", yarn, "factor");
  take_int("rope.scaling.original_context_length", yarn, "original_max_position_embeddings");
  take_number("rope.scaling.yarn_beta_fast", yarn, "beta_fast");
  take_number("rope.scaling.yarn_beta_slow", yarn, "beta_slow");
}

void GgufArchReader::take_leading_dense(nlohmann::json& hf) {
  hf["first_k_dense_replace"] = 0;
  take_int("leading_dense_block_count", hf, "first_k_dense_replace");
  if (hf["first_k_dense_replace"].get<std::int64_t>() >= hf["num_hidden_layers"].get<std::int64_t>())
    refuse("leading_dense_block_count", "must be fewer than the decoder layers (block_count without MTP layers): an "
                                        "MoE model has MoE layers");
}

void GgufArchReader::take_expert_groups(nlohmann::json& hf) {
  hf["n_group"] = 1;
  hf["topk_group"] = 1;
  const bool used = has("expert_group_used_count");
  take_int("expert_group_count", hf, "n_group");
  take_int("expert_group_used_count", hf, "topk_group");
  if (hf["n_group"].get<std::int64_t>() > 1 && !used)
    refuse("expert_group_used_count", "a file with expert_group_count above 1 names how many groups a token uses");
  if (used && !has("expert_group_count"))
    refuse("expert_group_used_count", "given without expert_group_count, which says how many groups there are");
}

bool GgufArchReader::has(std::string_view name) const {
  return file_->metadata().count(arch_ + "." + std::string(name)) > 0;
}

bool GgufArchReader::has_tensor(std::string_view name) const { return file_->find_tensor(std::string(name)) != nullptr; }

void GgufArchReader::refuse_untaken() const {
  const std::string prefix = arch_ + ".";
  for (const auto& [key, value] : file_->metadata())
    if (key.compare(0, prefix.size(), prefix) == 0 && !taken_.count(key))
      FERRY_THROW(FormatError, "GGUF '", file_->path(), "': key '", excerpt(key), "' = ", gguf_value_text(value),
                  " is not implemented for llama.cpp's ", arch_,
                  " architecture (ferry refuses keys it does not know rather than ignore them)");
}

int gguf_hf_head_dim(const nlohmann::json& hf) {
  if (hf.contains("head_dim") && hf["head_dim"].is_number_integer()) return hf["head_dim"].get<int>();
  if (hf.contains("hidden_size") && hf.contains("num_attention_heads") && hf["num_attention_heads"].get<std::int64_t>() > 0)
    return static_cast<int>(hf["hidden_size"].get<std::int64_t>() / hf["num_attention_heads"].get<std::int64_t>());
  return 0;
}

nlohmann::json gguf_hf_config(const quant::GgufFile& file) {
  const std::string arch = file.get_string("general.architecture");
  const ModelFamily* family = find_family_by_gguf_architecture(arch);
  if (family == nullptr)
    FERRY_THROW(FormatError, "GGUF '", file.path(), "': general.architecture '", excerpt(arch),
                "' is not one ferry reads (", gguf_architecture_names(), ")");
  for (const auto& [key, value] : file.metadata())
    if (key.rfind("split.", 0) == 0)
      FERRY_THROW(FormatError, "GGUF '", file.path(), "': key '", excerpt(key),
                  "': split GGUF files are not implemented (merge them with llama-gguf-split --merge)");
  GgufArchReader r(file, arch);
  nlohmann::json j = nlohmann::json::object();
  j["architectures"] = {family->hf_architecture};
  const quant::GgufValue* pre = file.find("tokenizer.ggml.pre");
  j["model_type"] = gguf_model_type(*family, pre != nullptr && pre->type == GgufType::kString ? pre->s : "");
  // Model.set_gguf_parameters backwards.
  r.take_int("block_count", j, "num_hidden_layers", true);
  r.take_int("context_length", j, "max_position_embeddings");
  r.take_int("embedding_length", j, "hidden_size", true);
  r.take_int("feed_forward_length", j, "intermediate_size");
  r.take_int("attention.head_count", j, "num_attention_heads", true);
  r.take_int("attention.head_count_kv", j, "num_key_value_heads");
  r.take_number("rope.freq_base", j, "rope_theta");
  r.take_number("attention.layer_norm_rms_epsilon", j, "rms_norm_eps");
  r.take_int("expert_used_count", j, "num_experts_per_tok", true);
  // MLA's key_length and value_length are the latent's: the family reads them with the heads'.
  if (!family->has_mla) {
    r.take_int("attention.key_length", j, "head_dim");
    if (j.contains("head_dim"))
      r.take_equal("attention.value_length", j["head_dim"].get<std::int64_t>(),
                   "the value heads as wide as the key heads (attention.key_length)");
    else if (r.take("attention.value_length"))
      r.refuse("attention.value_length", "given without attention.key_length");
  }
  const quant::GgufTensor* embd = file.find_tensor("token_embd.weight");
  if (embd == nullptr || embd->dims.size() != 2)
    FERRY_THROW(FormatError, "GGUF '", file.path(), "': tensor 'token_embd.weight' (2-D) is missing");
  j["vocab_size"] = embd->dims[1];
  j["tie_word_embeddings"] = file.find_tensor("output.weight") == nullptr;
  if (gguf_byte_vocabulary(file)) j["ferry_tokenizer"] = "byte";
  if (family->gguf_read_metadata) family->gguf_read_metadata(r, j);
  r.refuse_untaken();
  return j;
}

MoeConfig gguf_config(const quant::GgufFile& file) { return config_from_json(gguf_hf_config(file), file.path()); }

}  // namespace ferry::moe
