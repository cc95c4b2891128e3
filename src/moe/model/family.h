// Model families: one registry entry (core/registry.h) per Hugging Face MoE architecture ferry
// reads, each in its own file (family_mixtral.cc, family_qwen2_moe.cc, ...). An entry holds what
// differs between families: HF's config defaults, the config.json keys the family honours or
// refuses, its tensor names, the checks and defaults of `ferry moe make-tiny`, its chat template,
// and its GGUF architecture. Code elsewhere asks the entry; no family name is compared outside the
// family's own file.
//
// Adding a family: a family_NAME.cc defining a ModelFamily, and one line in
// register_builtin_families() (or register_model_family() from a test).
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "moe/model/config.h"

namespace ferry::moe {

class GgufKeys;
class GgufArchReader;

// Defaults of the keys every family has, as HF's config class of the family sets them.
struct FamilyDefaults {
  double rms_norm_eps = 1e-5;
  double rope_theta = 1e4;
  int max_position_embeddings = 4096;
  bool norm_topk_prob = false;  // also what make-tiny writes
};

// Another model_type read as a family (Kimi-K2's kimi_k2 as deepseek_v3): the same config keys,
// tensors and arithmetic; what differs is here.
struct FamilyAlias {
  std::string model_type;
  std::string chat_template = {};       // `ferry moe serve`'s default; "" = the family's
  // tokenizer.ggml.pre of its GGUF files (the converter names its tokenizer so), which also tells a
  // GGUF file of the alias from one of the family; "" = the family's
  std::string gguf_tokenizer_pre = {};
};

struct ModelFamily {
  std::string name;                         // HF's model_type, e.g. "qwen2_moe"
  std::string summary;                      // one line: the model and the HF modeling code it follows
  std::vector<FamilyAlias> aliases = {};    // other model_types read as this family
  std::string hf_architecture = {};         // config.json's "architectures" as ferry writes it
  FamilyDefaults defaults = {};
  // config.json keys this family accepts besides the common ones (config.cc): those read() reads and
  // those inert at inference. Any other key is refused by name.
  std::vector<std::string> config_keys = {};
  FamilyTensorNames tensors = {};
  std::string chat_template = "none";       // `ferry moe serve`'s default (moe/tokenizer/chat_template.h)
  bool has_shared_expert = false;           // make-tiny's --shared-expert applies
  bool has_dense_layers = false;            // make-tiny's --dense-layers applies
  bool has_mla = false;                     // latent attention: make-tiny's --kv-lora-rank, --q-lora-rank and
                                            // --v-head-dim apply; a GGUF file's key_length/value_length are the latent's
  bool has_partial_rotary = false;          // make-tiny's --rope-dim applies
  bool has_expert_groups = false;           // make-tiny's --expert-groups and --groups-used apply
  bool has_sliding_layers = false;          // which layers slide is the family's (its read() takes layer_types);
                                            // make-tiny's --sliding-window applies (gpt-oss: every other layer)
  bool yarn_attention = false;              // rope_scaling yarn on ordinary attention (HF's _compute_yarn_parameters:
                                            // cos and sin times its attention factor); else with MLA only
  // Reads the family's own keys into `config`, whose common fields are already read: expert count
  // and width, shared expert, dense layers, attention biases and norms, sliding window. Refuses
  // values ferry does not implement with one FormatError naming the key.
  std::function<void(const nlohmann::json&, MoeConfig&, const std::string& origin)> read = {};
  // Writes the family's own keys of `config` into `j`, which holds the common ones; read() of the
  // result gives `config` back.
  std::function<void(const MoeConfig&, nlohmann::json&)> write = {};
  // make-tiny: refuses a shape the family cannot have (InvalidArgument naming the flag) and sets
  // what the family's models always have and make-tiny has no flag for, and the defaults of the
  // flags left at 0 (rotary_dim, v_head_dim, n_group, topk_group); may be empty.
  std::function<void(MoeConfig&)> check_tiny = {};
  // GGUF (llama.cpp's format), as llama.cpp's convert_hf_to_gguf.py writes the family
  // (moe/model/gguf_layout.h reads these both ways):
  // general.architecture of a GGUF of this family;
  std::string gguf_architecture = {};
  // whether q and k rows are permuted from HF's rotate-half order to llama.cpp's interleaved one
  // (the converter's LlamaModel.permute; gguf_permute_rows());
  bool gguf_permute_qk = false;
  // the GGUF name of post_attention_layernorm (blk.N.<this>.weight; GLM-4.5: post_attention_norm);
  std::string gguf_ffn_norm = "ffn_norm";
  // tokenizer.ggml.pre of the family's tokenizer.json vocabulary (the converter names it from a
  // hash of the tokenizer's output on a test text; ferry takes the family's released tokenizer);
  std::string gguf_tokenizer_pre = "default";
  // the keys the family's converter class adds after the common ones (may be empty);
  std::function<void(const MoeConfig&, const nlohmann::json& hf_config, GgufKeys&)> gguf_metadata = {};
  // refuses (InvalidArgument naming the config key) a model llama.cpp's architecture cannot load,
  // and returns one line per config value the file cannot carry (llama.cpp will compute without it).
  std::function<std::vector<std::string>(const MoeConfig&)> gguf_check = {};
  // the inverse of gguf_metadata, for loading a GGUF file: takes the family's own "<arch>.*" keys
  // from `keys` into config.json keys of `hf_config` (which holds the common ones) and sets what
  // llama.cpp's architecture hard-codes (e.g. norm_topk_prob); a key it does not take is refused by
  // name (gguf_hf_config(), gguf_layout.h).
  std::function<void(GgufArchReader& keys, nlohmann::json& hf_config)> gguf_read_metadata = {};
};

// Registers a family; InvalidArgument if its name or an alias is taken, or its chat template is unknown.
void register_model_family(ModelFamily family);
// Mixtral, Qwen2-MoE, Qwen3-MoE, OLMoE, DeepSeek-MoE (V1), GLM-4.5, DeepSeek-V2/V3, gpt-oss, in that order.
// Idempotent.
void register_builtin_families();
// The family of a model_type (its name or an alias); nullptr for an unknown one.
const ModelFamily* find_family(const std::string& model_type);
// As find_family(); InvalidArgument "unknown model family 'X' (known: ...)" for an unknown one.
const ModelFamily& family_of(const std::string& model_type);
// The chat template a model_type is served with by default (an alias's own, else its family's;
// "none" for an unknown one).
std::string default_chat_template(const std::string& model_type);
// tokenizer.ggml.pre of a GGUF file of model_type's byte-level BPE tokenizer (an alias's own, else
// its family's). InvalidArgument for an unknown model_type.
std::string gguf_tokenizer_pre_of(const std::string& model_type);
// The model_type of a GGUF file of `family` whose tokenizer.ggml.pre is `tokenizer_pre`: the alias
// that names its tokenizer so, else the family.
std::string gguf_model_type(const ModelFamily& family, const std::string& tokenizer_pre);
// The family whose GGUF files have general.architecture `arch`; nullptr for none.
const ModelFamily* find_family_by_gguf_architecture(const std::string& arch);
// Every family's GGUF architecture, "a, b, c" (error messages).
std::string gguf_architecture_names();
// In registration order (help texts and error messages).
std::vector<std::string> model_family_names();

// `ferry moe make-tiny`: checks a config of --family's shape against the family (an unknown
// family, flags it has no place for) and completes it as the family's HF config class would
// (norm_topk_prob, sorted dense layers, their width). Throws InvalidArgument naming the flag.
void prepare_tiny_config(MoeConfig& config);

}  // namespace ferry::moe
