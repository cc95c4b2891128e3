// A Hugging Face checkpoint of each family as a GGUF file, exactly as llama.cpp's converter
// (convert_hf_to_gguf.py, at commit c392e509 of 2025-02-20; Qwen3-MoE as its Qwen2-MoE class with
// architecture qwen3moe, as the class was added) writes it, in one place and usable both ways:
// the exporter (`ferry moe quantize`, gguf_export.h) walks it from HF to GGUF, a GGUF loader walks
// the same plan back.
//
// Tensors (gguf_tensor_plan): every family shares the embedding, norms, attention and head names
// below; its MoE names follow from its entry's HF names (ModelFamily::tensors). ggml dims are the
// HF shape reversed (row length first); the experts of a layer are stacked into one 3-D tensor per
// projection, expert e at index e of the last dim:
//
//   model.embed_tokens.weight                    token_embd.weight            [H, V]
//   model.norm.weight                            output_norm.weight           [H]
//   lm_head.weight                               output.weight                [H, V]  (untied only)
//   model.layers.N.input_layernorm.weight        blk.N.attn_norm.weight       [H]
//   model.layers.N.self_attn.{q,k,v,o}_proj.*    blk.N.attn_{q,k,v,output}.*  [H, heads·D] ...
//   model.layers.N.self_attn.{q,k}_norm.weight   blk.N.attn_{q,k}_norm.weight [D] or [heads·D]
//   model.layers.N.post_attention_layernorm.w.   blk.N.ffn_norm.weight        [H]
//   router / experts / shared expert / dense MLP blk.N.ffn_gate_inp [H, E], ffn_{gate,up}_exps
//                                                [H, I, E], ffn_down_exps [I, H, E], ffn_*_shexp,
//                                                ffn_gate_inp_shexp [H, 1], ffn_{gate,up,down}
//
// For the llama and deepseek architectures (ModelFamily::gguf_permute_qk) the rows of q and k
// (weights and biases) are permuted from HF's rotate-half order to the interleaved order of
// llama.cpp's rope: with rows = n_head·2·half, row (h, s, i) of HF (head h, half s, index i) goes
// to row (h, i, s) of GGUF, i.e. reshape(n_head, 2, half, cols).swapaxes(1, 2) (LlamaModel.permute;
// k uses the key/value head count).
//
// Metadata (gguf_model_metadata): general.architecture, general.type, general.name, then the
// converter's common keys (Model.set_gguf_parameters: block_count, context_length,
// embedding_length, feed_forward_length, attention.head_count, head_count_kv, rope.freq_base,
// attention.layer_norm_rms_epsilon, expert_count, expert_used_count, attention.key_length and
// value_length, each only when config.json has its key), the family's own (ModelFamily::
// gguf_metadata), the tokenizer's (gguf_tokenizer_metadata), then general.quantization_version = 2
// and general.file_type last, where llama-quantize moves them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "moe/model/config.h"
#include "moe/quant/gguf_file.h"
#include "moe/quant/quant_mix.h"
#include "moe/tokenizer/tokenizer.h"

namespace ferry::moe {

// GGUF metadata in the order written. set() of a key already present replaces its value in place
// (as gguf-py's writer does).
class GgufKeys {
 public:
  explicit GgufKeys(std::string arch) : arch_(std::move(arch)) {}
  // "<arch>.<name>"
  std::string arch(std::string_view name) const { return arch_ + "." + std::string(name); }
  void set(const std::string& key, quant::GgufValue value);
  void set_u32(const std::string& key, std::int64_t value);
  void set_f32(const std::string& key, double value);
  void set_bool(const std::string& key, bool value);
  void set_string(const std::string& key, std::string value);
  void set_strings(const std::string& key, std::vector<std::string> values);
  void set_f32s(const std::string& key, const std::vector<float>& values);
  void set_i32s(const std::string& key, const std::vector<std::int32_t>& values);
  void erase(const std::string& key);
  const quant::GgufValue* find(std::string_view key) const;
  const std::vector<std::pair<std::string, quant::GgufValue>>& entries() const { return entries_; }

 private:
  std::string arch_;
  std::vector<std::pair<std::string, quant::GgufValue>> entries_;
};

// llama.cpp's expert gating functions (<arch>.expert_gating_func: llama_expert_gating_func_type).
constexpr int kGgufGatingSoftmax = 1, kGgufGatingSigmoid = 2;

// One tensor of the GGUF file and its source in the checkpoint.
struct GgufTensorPlan {
  std::string name;                    // GGUF name, e.g. "blk.3.ffn_down_exps.weight"
  std::vector<std::uint64_t> dims;     // ggml dims, row length first
  std::vector<std::string> hf_names;   // its HF tensor, or one per expert (stacked in that order)
  std::vector<std::int64_t> hf_shape;  // the shape of each HF tensor (row-major)
  int permute_heads = 0;               // > 0: rows permuted (gguf_permute_rows) over this many heads
  int layer = -1;                      // decoder layer; -1 for the embedding, final norm and head
  bool stacked = false;                // hf_names are experts stacked along the last dim
  // MLA: the HF tensor this one is a part of (kv_b_proj [heads * (nope + v), kv_lora]), for the
  // parts the converter splits it into; hf_names then holds the part's own name, "k_b_proj"
  // [heads * kv_lora, nope] (each head's key rows transposed) or "v_b_proj" [heads * v, kv_lora],
  // as a loader reads it; dims are the file's 3-D ones, [nope, kv_lora, heads] and [kv_lora, v, heads].
  std::string split_from = {};
};

// The part `part` ("k_b_proj" or "v_b_proj", gguf_layout.h's GgufTensorPlan::split_from) of MLA's
// kv_b_proj `kv_b` [heads * (nope + v), kv_lora] of `config`, in its GGUF layout.
std::vector<float> mla_kv_b_part(const std::vector<float>& kv_b, const std::string& part, const MoeConfig& config);
// kv_b_proj's shape: [heads * (nope + v), kv_lora].
std::vector<std::int64_t> mla_kv_b_shape(const MoeConfig& config);

// The tensors of a GGUF file of `config`'s family, in llama-quantize's order
// (quant::gguf_tensor_order). InvalidArgument when the family has no GGUF layout.
std::vector<GgufTensorPlan> gguf_tensor_plan(const MoeConfig& config);

// Whether `name` belongs to a multi-token-prediction layer stored after the decoder layers
// (blk.N with num_layers <= N < num_layers + nextn_layers): the loader skips those.
bool gguf_nextn_tensor(std::string_view name, const MoeConfig& config);

// The q/k permutation: `in` holds rows × cols values (rows = n_head · 2 · half), `out` receives
// them with HF row (h, s, i) at GGUF row (h, i, s). gguf_unpermute_rows() is its inverse.
void gguf_permute_rows(std::span<const float> in, std::span<float> out, std::int64_t rows, std::int64_t cols,
                       int n_head);
void gguf_unpermute_rows(std::span<const float> in, std::span<float> out, std::int64_t rows, std::int64_t cols,
                         int n_head);
// The same inverse on rows of blocks (`row_bytes` bytes each), as a block format stores them.
void gguf_unpermute_row_bytes(std::span<const std::byte> in, std::span<std::byte> out, std::int64_t rows,
                              std::int64_t row_bytes, int n_head);

// Up to general.file_type (excluded): the general keys, the converter's common keys and the
// family's. `hf_config` is config.json as read (the converter writes a key only when it is there);
// `name` becomes general.name.
GgufKeys gguf_model_metadata(const MoeConfig& config, const nlohmann::json& hf_config, const std::string& name);

// The tokenizer keys, appended to `keys`, as the converter writes `vocab` for this family
// (SentencePiece: model "llama"; tokenizer.json BPE: model "gpt2" with merges and the family's
// pre; ferry's byte vocabulary: model "gpt2", pre "default", the 256 byte symbols, no merges, no
// BOS, which llama.cpp tokenizes as bytes) and its special tokens as gguf-py's SpecialVocab reads
// them from `model_dir` (tokenizer.json's added tokens, tokenizer_config.json; none when empty) and config.json.
// The token list is padded to config.vocab_size with "[PAD<id>]" (unused). FormatError when the
// tokenizer has more tokens than the embedding.
void gguf_tokenizer_metadata(GgufKeys& keys, const TokenizerVocab& vocab, const MoeConfig& config,
                             const std::string& model_dir, const nlohmann::json& hf_config);

// general.quantization_version and general.file_type, last (as llama-quantize writes them).
void gguf_file_type_metadata(GgufKeys& keys, quant::LlamaFileType file_type);

// The family's refusals and notes (ModelFamily::gguf_check), and llama3 rope scaling refused
// (its rope_freqs tensor is not written). InvalidArgument naming the config key.
std::vector<std::string> gguf_check_supported(const MoeConfig& config);
// For a family's gguf_metadata: expert_group_count and expert_group_used_count, each written as the
// converter does only where config.json `hf_config` has its key (n_group, topk_group); a config whose
// groups (> 1) come from a default is refused (InvalidArgument naming the key): the file would hold
// a group count without its used count, which llama.cpp asserts, or no groups at all.
void gguf_set_expert_groups(const MoeConfig& config, const nlohmann::json& hf_config, GgufKeys& keys);
// For a family's gguf_metadata: YaRN's keys as the converter writes them (rope.scaling.type yarn,
// factor, original_context_length, yarn_beta_fast, yarn_beta_slow) when config's rope_scaling is yarn.
void gguf_set_yarn(const MoeConfig& config, GgufKeys& keys);
// For a family's gguf_check: refuses rope scaling other than none (and linear when the family's
// metadata writes it).
void gguf_refuse_rope_scaling(const MoeConfig& config, bool linear_written);

// ---------------------------------------------------------------------------------------------
// Reading a GGUF file back (the loader, gguf_model.h)

// The "<arch>.*" keys of a GGUF file, taken one by one into config.json keys (the inverse of
// gguf_model_metadata and of each family's gguf_metadata). A key nobody takes is refused by name
// (refuse_untaken), as config.json refuses keys it does not know.
class GgufArchReader {
 public:
  // `file` outlives the reader (both are locals of gguf_hf_config's caller).
  GgufArchReader(const quant::GgufFile& file, std::string arch);
  const std::string& arch() const { return arch_; }
  // "<arch>.<name>", marked as taken; nullptr when absent.
  const quant::GgufValue* take(std::string_view name);
  // An integer >= 0 into hf[hf_key] when present (required: FormatError when absent).
  void take_int(std::string_view name, nlohmann::json& hf, const char* hf_key, bool required = false);
  // A number into hf[hf_key] when present.
  void take_number(std::string_view name, nlohmann::json& hf, const char* hf_key);
  // An integer key that, when present, must equal `expected` (else refused, naming `what`).
  void take_equal(std::string_view name, std::int64_t expected, const std::string& what);
  // Whether the file has tensor `name` (a family whose keys do not say which optional tensors
  // its layers have: GLM-4.5's q/k norms and biases).
  bool has_tensor(std::string_view name) const;
  // nextn_predict_layers, when present: the multi-token-prediction layers that block_count counts
  // after the decoder layers, into num_nextn_predict_layers (and num_hidden_layers without them).
  void take_nextn_layers(nlohmann::json& hf);
  // A bool into hf[hf_key], `fallback` when absent.
  void take_bool(std::string_view name, nlohmann::json& hf, const char* hf_key, bool fallback);
  // leading_dense_block_count into first_k_dense_replace (0 when absent), fewer than the decoder
  // layers (hf's num_hidden_layers, the multi-token-prediction layers already taken out).
  void take_leading_dense(nlohmann::json& hf);
  // expert_group_count and expert_group_used_count into n_group and topk_group (1 and 1 when absent,
  // as llama.cpp routes without groups); a file with groups names both (llama.cpp asserts a used
  // count; a used count alone leaves the groups open).
  void take_expert_groups(nlohmann::json& hf);
  // Whether "<arch>.<name>" is in the file (without taking it).
  bool has(std::string_view name) const;
  // YaRN's factor, original_context_length, yarn_beta_fast and yarn_beta_slow, when present, into
  // the rope_scaling object `yarn` (gguf_set_yarn's inverse).
  void take_yarn(nlohmann::json& yarn);
  // A string key, or `fallback` when absent.
  std::string take_string(std::string_view name, const std::string& fallback);
  // FormatError "GGUF 'PATH': key '<arch>.NAME' = VALUE is not implemented (WHY)".
  [[noreturn]] void refuse(std::string_view name, const std::string& why) const;
  // Refuses the first "<arch>.*" key not taken.
  void refuse_untaken() const;

 private:
  const quant::GgufFile* file_;
  std::string arch_;
  std::set<std::string, std::less<>> taken_;  // full keys
};

// The config.json of a GGUF file: the family found by general.architecture (registry), the common
// keys here, the family's own by its gguf_read_metadata, the vocabulary size from token_embd, tied
// embeddings when there is no output.weight, "ferry_tokenizer": "byte" for ferry's byte vocabulary.
// FormatError naming the file and the key for an unknown architecture or a key no one takes.
nlohmann::json gguf_hf_config(const quant::GgufFile& file);
// config_from_json of gguf_hf_config, the file's path as origin.
MoeConfig gguf_config(const quant::GgufFile& file);
// The head width a config.json implies (head_dim, else hidden_size / num_attention_heads); 0 when
// it cannot tell.
int gguf_hf_head_dim(const nlohmann::json& hf);

}  // namespace ferry::moe
