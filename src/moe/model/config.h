// The model configuration of a Hugging Face MoE checkpoint (config.json), read as HF's modeling
// code defines it: the keys every family has here, each family's own in its registry entry
// (moe/model/family.h: Mixtral, Qwen2-MoE, Qwen3-MoE, OLMoE and DeepSeek-MoE V1).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace ferry::moe {

// config.json's rope_scaling (or rope_parameters), as HF's rope initialisers read it.
struct RopeScaling {
  std::string type = "default";                // default, linear, llama3 or yarn (others are refused)
  double factor = 1.0;                         // linear, llama3: how much longer the context is
  double low_freq_factor = 1.0;                // llama3
  double high_freq_factor = 4.0;               // llama3
  int original_max_position_embeddings = 8192;  // llama3, yarn: the context the model was trained for
  double beta_fast = 32, beta_slow = 1;        // yarn: the rotations bounding the interpolated dims
  double mscale = 1, mscale_all_dim = 0;       // yarn, as DeepSeek's attention applies them (rope_attention_factor)
  bool truncate = true;                        // yarn: the correction range rounded out to whole dims (HF's
                                               // `truncate`; gpt-oss: false)
};

struct MoeConfig {
  std::string model_type = "mixtral";  // the family (moe/model/family.h; also the default of a
                                       // config.json without model_type)
  std::string model_alias = "";        // config.json's model_type where it names an alias of the
                                       // family (kimi_k2 of deepseek_v3), written back; "" = none
  int vocab_size = 256;                // tokens in the embedding / LM head
  int hidden_size = 64;                // model width H
  int intermediate_size = 128;         // expert FFN width I (qwen2_moe: moe_intermediate_size)
  int num_layers = 2;                  // decoder blocks (num_hidden_layers)
  int num_heads = 4;                   // query heads
  int num_kv_heads = 2;                // key/value heads (grouped-query attention)
  int head_dim = 16;                   // per-head width (default hidden_size / num_heads)
  int rotary_dim = 0;                  // leading dims of each q/k head rotated (partial_rotary_factor
                                       // x head_dim); 0 = all of head_dim. MLA: qk_rope_head_dim
  // Multi-head latent attention (DeepSeek-V2/V3, Kimi-K2; moe/model/mla.h): every head's keys and
  // values are decompressed from one latent of kv_lora_rank per token, which the KV cache holds with
  // the one rotary key shared by the heads; 0 = ordinary attention. head_dim is then the q/k head,
  // qk_nope_head_dim non-rotary dims followed by rotary_dim rotary ones (interleaved pairs), and
  // num_kv_heads equals num_heads.
  int kv_lora_rank = 0;
  int q_lora_rank = 0;                 // > 0: queries through a bottleneck of this rank (with its RMSNorm)
  int v_head_dim = 0;                  // MLA: each head's value width
  int num_experts = 8;                 // routed experts per layer (num_local_experts)
  int top_k = 2;                       // experts per token (num_experts_per_tok)
  bool norm_topk_prob = true;          // renormalise the top-k router probabilities to sum 1
  // Routing (decoder_ops.h, route): the scores experts are chosen by and weighted with.
  std::string scoring_func = "softmax";  // softmax over the experts, or sigmoid of each logit (GLM-4.5)
  bool router_bias = false;            // a per-expert bias added to the scores for the choice only
                                       // (e_score_correction_bias); the weights stay unbiased
  bool router_logit_bias = false;      // the router's linear layer has a bias, added to its logits (gpt-oss)
  bool expert_bias = false;            // each routed expert's gate, up and down projections have biases (gpt-oss)
  bool mxfp4_experts = false;          // the checkpoint stores the routed experts' weights in MXFP4 (gpt-oss's
                                       // quantization_config mxfp4: *_blocks and *_scales, fused_experts.h)
  // > 0: the experts' unit is gpt-oss's clamped SwiGLU instead of act(gate) * up:
  // (clamp(up, -limit, limit) + 1) * g * sigmoid(swiglu_alpha * g), g = min(gate, limit).
  double swiglu_limit = 0;
  double swiglu_alpha = 1.702;
  int n_group = 1;                     // experts in n_group equal groups; a token chooses among the
  int topk_group = 1;                  // topk_group groups whose two best scores sum highest, or
  bool group_by_max = false;           // whose best score is highest (DeepSeek-V2's group_limited_greedy)
  double routed_scaling_factor = 1.0;  // the routed experts' weights times this (after renormalising)
  int shared_expert_intermediate_size = 0;  // >0: an always-active shared expert of this width
  bool shared_expert_gate = false;     // the shared expert's output is scaled by sigmoid(x . g)
  std::vector<int> dense_layers;       // decoder layers with one dense MLP instead of experts (sorted)
  int dense_intermediate_size = 0;     // the dense MLP's width (HF: intermediate_size)
  bool qkv_bias = false;               // q/k/v projections have biases (Qwen2-MoE; attention_bias)
  bool o_bias = false;                 // the output projection has a bias (attention_bias)
  std::string qk_norm = "";            // "head": RMSNorm of each q/k head (Qwen3-MoE); "full": of the
                                       // whole q/k projection (OLMoE); "": none
  double clip_qkv = 0;                 // >0: q, k, v clamped to [-clip, clip] (OLMoE)
  double rms_norm_eps = 1e-5;          // RMSNorm epsilon
  double rope_theta = 1e6;             // rotary base
  RopeScaling rope_scaling;            // rotary frequency scaling (default: none)
  std::string hidden_act = "silu";     // the experts' activation (HF's ACT2FN name)
  int sliding_window = 0;              // >0: windowed layers attend to the last this-many positions
  int max_window_layers = 0;           // the first windowed layer (Qwen2-MoE's key; Mixtral: 0)
  std::vector<int> full_attention_layers;  // layers without the window whatever the above say (sorted;
                                           // gpt-oss's layer_types full_attention)
  bool attn_sinks = false;             // one learned logit per head joins each softmax's denominator
                                       // (gpt-oss's sinks): attention may go to no position
  int max_position_embeddings = 4096;  // longest sequence the KV cache accepts
  bool tie_word_embeddings = false;    // LM head shares the embedding matrix
  int nextn_layers = 0;                // multi-token-prediction layers stored after the last
                                       // decoder layer (num_nextn_predict_layers): not run for logits
  std::string tokenizer = "";          // "byte" for ferry's tiny models; "" = tokenizer.model

  // config.json's model_type: the alias, else the family (its chat template, its GGUF tokenizer).
  const std::string& declared_model_type() const { return model_alias.empty() ? model_type : model_alias; }
  // The dims of each q/k head the rotary embedding turns (the first ones; MLA: the last ones).
  int rotary_dims() const { return rotary_dim > 0 ? rotary_dim : head_dim; }
  bool mla() const { return kv_lora_rank > 0; }
  // What the KV cache holds per position and layer: kv_cache_heads() x (key + value) floats; with
  // MLA one latent and rotary key (kv_lora_rank + rotary dims) and no separate value.
  int kv_cache_heads() const { return mla() ? 1 : num_kv_heads; }
  int kv_key_width() const { return mla() ? kv_lora_rank + rotary_dims() : head_dim; }
  int kv_value_width() const { return mla() ? 0 : head_dim; }
  // The width of the attention output projected by o_proj, per head.
  int attn_value_width() const { return mla() ? v_head_dim : head_dim; }
  // Whether `layer` uses sliding-window attention.
  bool windowed(int layer) const {
    return sliding_window > 0 && layer >= max_window_layers &&
           !std::binary_search(full_attention_layers.begin(), full_attention_layers.end(), layer);
  }
  // Layers with routed experts. Expert ids, traces, policies and the store count only these
  // ("MoE layers" 0..num_moe_layers()-1); decoder_layer() maps one back to its decoder block.
  int num_moe_layers() const { return num_layers - static_cast<int>(dense_layers.size()); }
  // The MoE-layer index of decoder layer `layer`, or -1 for a dense layer.
  int moe_layer(int layer) const;
  // The decoder layer of MoE layer `moe_layer`.
  int decoder_layer(int moe_layer) const;
  // Bytes of one routed expert in float32 (w1, w3: I x H; w2: H x I).
  std::int64_t expert_params() const { return 3ll * hidden_size * intermediate_size; }
  // Every weight of the model (embedding, attention, norms, routers, experts, LM head), in double
  // so that absurd sizes do not wrap.
  double parameter_count() const;
  // Throws InvalidArgument naming the field when inconsistent (e.g. heads not dividing).
  void validate(const std::string& origin) const;
};

// Reads DIR/config.json (or a path to the file), or the metadata of a GGUF model file (any other
// file: gguf_layout.h's gguf_config). Throws IoError / FormatError naming the file.
MoeConfig load_config(const std::string& dir_or_file);
MoeConfig config_from_json(const nlohmann::json& j, const std::string& origin);
nlohmann::json config_to_json(const MoeConfig& c);

// How a family names the MLP tensors of a decoder layer (HF's modeling code): the module of the
// MoE block (or the dense MLP), an expert's three projections, the shared expert's module.
struct FamilyTensorNames {
  std::string moe_module = "mlp.";              // under model.layers.N.
  std::string gate = "gate_proj";               // w1
  std::string up = "up_proj";                   // w3
  std::string down = "down_proj";               // w2
  std::string shared_expert = "shared_expert.";  // the shared expert's module under moe_module
  std::string router = "gate";                  // the router's module under moe_module
  // HF stores a layer's experts fused, as gpt-oss does (moe/model/fused_experts.h): ferry reads
  // them under the per-expert names below all the same.
  bool fused_experts = false;
};

// Tensor names of the checkpoint, read as the family names them. Layers are decoder layers.
struct TensorNames {
  // The names of config.model_type's family (moe/model/family.h); InvalidArgument for an unknown one.
  explicit TensorNames(const MoeConfig& config);
  std::string embed() const { return "model.embed_tokens.weight"; }
  std::string final_norm() const { return "model.norm.weight"; }
  std::string lm_head() const { return "lm_head.weight"; }
  std::string layer(int l) const { return "model.layers." + std::to_string(l) + "."; }
  std::string attn_norm(int l) const { return layer(l) + "input_layernorm.weight"; }
  std::string ffn_norm(int l) const { return layer(l) + "post_attention_layernorm.weight"; }
  // proj: 'q', 'k', 'v' or 'o'; suffix "weight" or "bias".
  std::string attn(int l, char proj, const char* suffix = "weight") const {
    return layer(l) + "self_attn." + proj + "_proj." + suffix;
  }
  // MLA's projections and norms by HF name: "q_a_proj", "q_a_layernorm", "q_b_proj", "q_proj",
  // "kv_a_proj_with_mqa", "kv_a_layernorm", "kv_b_proj"; and "k_b_proj", "v_b_proj", kv_b_proj's two
  // parts as a GGUF file stores them (moe/model/gguf_layout.h).
  std::string mla(int l, const char* name) const { return layer(l) + "self_attn." + name + ".weight"; }
  // which: 'q' or 'k' (Qwen3-MoE, OLMoE)
  std::string qk_norm(int l, char which) const { return layer(l) + "self_attn." + which + "_norm.weight"; }
  std::string router(int l, const char* suffix = "weight") const { return moe(l) + names_.router + "." + suffix; }
  std::string router_bias(int l) const { return moe(l) + "gate.e_score_correction_bias"; }
  // which: 1 = gate (w1), 3 = up (w3), 2 = down (w2), Mixtral numbering.
  std::string expert(int l, int e, int which) const {
    return moe(l) + "experts." + std::to_string(e) + "." + proj(which) + ".weight";
  }
  std::string shared_expert(int l, int which) const {
    return moe(l) + names_.shared_expert + proj(which) + ".weight";
  }
  // The dense MLP of a layer without experts (Qwen's mlp_only_layers, DeepSeek's first layers).
  std::string dense_mlp(int l, int which) const { return moe(l) + proj(which) + ".weight"; }
  std::string shared_expert_gate(int l) const { return moe(l) + "shared_expert_gate.weight"; }
  // The biases of every expert of a layer, one row per expert (gpt-oss; HF's fused tensors read
  // apart as llama.cpp's converter splits them): which as in expert().
  std::string expert_bias(int l, int which) const { return moe(l) + "experts." + proj(which) + ".bias"; }
  // gpt-oss's attention sinks: one logit per head.
  std::string attn_sinks(int l) const { return layer(l) + "self_attn.sinks"; }

 private:
  std::string moe(int l) const { return layer(l) + names_.moe_module; }
  const std::string& proj(int which) const {
    return which == 1 ? names_.gate : which == 3 ? names_.up : names_.down;
  }
  FamilyTensorNames names_;
};

}  // namespace ferry::moe
