#include "moe/model/family.h"

#include <algorithm>

#include "core/error.h"
#include "core/registry.h"
#include "moe/tokenizer/chat_template.h"

namespace ferry::moe {

// One file each (family_<name>.cc).
ModelFamily mixtral_family();
ModelFamily qwen2_moe_family();
ModelFamily qwen3_moe_family();
ModelFamily olmoe_family();
ModelFamily deepseek_family();
ModelFamily glm4_moe_family();
ModelFamily deepseek_v3_family();
ModelFamily gpt_oss_family();

namespace {

Registry<ModelFamily>& registry() {
  static Registry<ModelFamily> r("model family");
  return r;
}

// The registered families that `keep`, in registration order, as "a, b or c" (`last` = " or ") or
// "a, b, c" (`last` = ", "). Called once registration is over (Registry::entries()).
template <typename Keep>
std::string family_list(Keep keep, const char* last) {
  std::vector<std::string> names;
  for (const ModelFamily& f : registry().entries())
    if (keep(f)) names.push_back(f.name);
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) out += (i == 0 ? "" : i + 1 == names.size() ? last : ", ") + names[i];
  return out;
}

// The alias `model_type` of `family`; nullptr when it is not one.
const FamilyAlias* find_alias(const ModelFamily& family, const std::string& model_type) {
  for (const FamilyAlias& a : family.aliases)
    if (a.model_type == model_type) return &a;
  return nullptr;
}

// find_family() without registering the built-in families first (register_builtin_families()
// itself registers through here).
const ModelFamily* find_registered(const std::string& model_type) {
  if (const ModelFamily* f = registry().find(model_type)) return f;
  for (const ModelFamily& f : registry().entries())
    if (find_alias(f, model_type) != nullptr) return &f;
  return nullptr;
}

}  // namespace

void register_model_family(ModelFamily family) {
  FERRY_REQUIRE(family.read && family.write, "model family '", family.name, "' needs read and write");
  const std::vector<std::string> templates = chat_template_names();
  auto require_template = [&](const std::string& name, const std::string& owner) {
    FERRY_REQUIRE(std::find(templates.begin(), templates.end(), name) != templates.end(), "model family '",
                  family.name, "'", owner, ": unknown chat template '", name, "'");
  };
  for (const FamilyAlias& alias : family.aliases) {
    FERRY_REQUIRE(find_registered(alias.model_type) == nullptr, "model family '", family.name, "': alias '",
                  alias.model_type, "' is taken");
    if (!alias.chat_template.empty()) require_template(alias.chat_template, " (alias '" + alias.model_type + "')");
  }
  FERRY_REQUIRE(find_registered(family.name) == nullptr, "model family '", family.name, "' registered twice");
  require_template(family.chat_template, "");
  registry().add(std::move(family));
}

void register_builtin_families() {
  static const bool done = [] {
    for (auto make : {mixtral_family, qwen2_moe_family, qwen3_moe_family, olmoe_family, deepseek_family, glm4_moe_family,
                      deepseek_v3_family, gpt_oss_family})
      register_model_family(make());
    return true;
  }();
  (void)done;
}

const ModelFamily* find_family(const std::string& model_type) {
  register_builtin_families();
  return find_registered(model_type);
}

const ModelFamily& family_of(const std::string& model_type) {
  if (const ModelFamily* f = find_family(model_type)) return *f;
  return registry().at(model_type);  // throws, listing the known families
}

std::string default_chat_template(const std::string& model_type) {
  const ModelFamily* family = find_family(model_type);
  if (family == nullptr) return "none";
  const FamilyAlias* alias = find_alias(*family, model_type);
  return alias != nullptr && !alias->chat_template.empty() ? alias->chat_template : family->chat_template;
}

std::string gguf_tokenizer_pre_of(const std::string& model_type) {
  const ModelFamily& family = family_of(model_type);
  const FamilyAlias* alias = find_alias(family, model_type);
  return alias != nullptr && !alias->gguf_tokenizer_pre.empty() ? alias->gguf_tokenizer_pre : family.gguf_tokenizer_pre;
}

std::string gguf_model_type(const ModelFamily& family, const std::string& tokenizer_pre) {
  for (const FamilyAlias& a : family.aliases)
    if (!a.gguf_tokenizer_pre.empty() && a.gguf_tokenizer_pre == tokenizer_pre) return a.model_type;
  return family.name;
}

const ModelFamily* find_family_by_gguf_architecture(const std::string& arch) {
  register_builtin_families();
  for (const ModelFamily& f : registry().entries())
    if (!f.gguf_architecture.empty() && f.gguf_architecture == arch) return &f;
  return nullptr;
}

std::string gguf_architecture_names() {
  register_builtin_families();
  std::string out;
  for (const ModelFamily& f : registry().entries())
    if (!f.gguf_architecture.empty()) out += (out.empty() ? "" : ", ") + f.gguf_architecture;
  return out;
}

std::vector<std::string> model_family_names() {
  register_builtin_families();
  std::vector<std::string> out;
  for (const ModelFamily& f : registry().entries()) out.push_back(f.name);
  return out;
}

TensorNames::TensorNames(const MoeConfig& config) : names_(family_of(config.model_type).tensors) {}

void prepare_tiny_config(MoeConfig& c) {
  // An alias is not a family of its own: make-tiny writes the family's name.
  const ModelFamily* family = find_family(c.model_type);
  FERRY_REQUIRE(family != nullptr && family->name == c.model_type, "--family '", c.model_type, "' is not one of ",
                family_list([](const ModelFamily&) { return true; }, ", "));
  // A flag the family has no place for names the families that have one.
  auto flag_needs = [&](bool given, const char* flags_need, bool ModelFamily::*has, const char* what) {
    FERRY_REQUIRE(!given || family->*has, flags_need, " --family ",
                  family_list([&](const ModelFamily& f) { return f.*has; }, " or "), " (", family->name, " has no ",
                  what, ")");
  };
  flag_needs(c.shared_expert_intermediate_size != 0, "--shared-expert needs", &ModelFamily::has_shared_expert, "shared expert");
  flag_needs(!c.dense_layers.empty(), "--dense-layers needs", &ModelFamily::has_dense_layers, "dense layers");
  flag_needs(c.kv_lora_rank != 0 || c.q_lora_rank != 0 || c.v_head_dim != 0, "--kv-lora-rank, --q-lora-rank and --v-head-dim need",
             &ModelFamily::has_mla, "latent attention");
  flag_needs(c.rotary_dim != 0, "--rope-dim needs", &ModelFamily::has_partial_rotary, "partial rotary heads");
  flag_needs(c.sliding_window != 0, "--sliding-window needs", &ModelFamily::has_sliding_layers, "sliding layers");
  FERRY_REQUIRE(c.sliding_window >= 0, "--sliding-window ", c.sliding_window, ": expected 0 (the family's default) or more");
  flag_needs(c.n_group > 1 || c.topk_group > 1, "--expert-groups and --groups-used need", &ModelFamily::has_expert_groups,
             "expert groups");
  FERRY_REQUIRE(c.rotary_dim >= 0 && c.rotary_dim < c.head_dim && c.rotary_dim % 2 == 0, "--rope-dim ", c.rotary_dim,
                ": expected an even number of dims below --head-dim (", c.head_dim, "), 0 for the family's default");
  FERRY_REQUIRE(c.v_head_dim >= 0 && c.n_group >= 0 && c.topk_group >= 0,
                "--v-head-dim, --expert-groups and --groups-used must be at least 0 (0: the family's default)");
  if (family->check_tiny) family->check_tiny(c);
  if (c.n_group == 0) c.n_group = 1;
  if (c.topk_group == 0) c.topk_group = 1;
  std::sort(c.dense_layers.begin(), c.dense_layers.end());
  if (c.dense_intermediate_size == 0) c.dense_intermediate_size = 2 * c.intermediate_size;
  c.norm_topk_prob = family->defaults.norm_topk_prob;
}

}  // namespace ferry::moe
