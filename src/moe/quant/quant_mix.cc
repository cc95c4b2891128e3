#include "moe/quant/quant_mix.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <numeric>

#include "core/error.h"

namespace ferry::moe::quant {
namespace {

struct FileTypeEntry {
  const char* name;
  LlamaFileType type;
  QuantType base;
};
constexpr FileTypeEntry kFileTypes[] = {
    {"F32", LlamaFileType::kAllF32, QuantType::kF32},          {"F16", LlamaFileType::kMostlyF16, QuantType::kF16},
    {"BF16", LlamaFileType::kMostlyBF16, QuantType::kBF16},    {"Q8_0", LlamaFileType::kMostlyQ8_0, QuantType::kQ8_0},
    {"Q4_0", LlamaFileType::kMostlyQ4_0, QuantType::kQ4_0},    {"Q4_K_M", LlamaFileType::kMostlyQ4_K_M, QuantType::kQ4_K},
    {"Q6_K", LlamaFileType::kMostlyQ6_K, QuantType::kQ6_K},
    {"MXFP4_MOE", LlamaFileType::kMostlyMXFP4_MOE, QuantType::kMXFP4},
};

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }
bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

int layer_of(const std::string& name) {
  int layer = -1;
  std::sscanf(name.c_str(), "blk.%d.", &layer);
  return layer;
}

// ggml_n_dims: the dimensions up to the last one above 1.
int n_dims(const std::vector<std::uint64_t>& dims) {
  int n = 1;
  for (int d = static_cast<int>(dims.size()) - 1; d >= 1; --d)
    if (dims[d] > 1) {
      n = d + 1;
      break;
    }
  return n;
}

bool quantized(QuantType t) {
  return t != QuantType::kF32 && t != QuantType::kF16 && t != QuantType::kBF16;
}

// llama_model_quantize_impl's `quantize` for a tensor of a float32 file (the predicates of
// other architectures' tensors, pos_embd, ssm_conv1d, time_mix_*, attn_rel_b, never match here).
bool is_quantized_tensor(const MixTensor& t) {
  return ends_with(t.name, "weight") && n_dims(t.dims) >= 2 && !contains(t.name, "_norm.weight") &&
         !contains(t.name, "ffn_gate_inp.weight");
}

struct State {  // llama-quant.cpp's quantize_state_impl, the fields the mix reads
  int n_attention_wv = 0;
  int i_attention_wv = 0;
  int i_ffn_down = 0;
  bool has_output = false;
};

bool use_more_bits(int i_layer, int n_layers) {
  return i_layer < n_layers / 8 || i_layer >= 7 * n_layers / 8 || (i_layer - n_layers / 8) % 3 == 2;
}

// llama_tensor_get_type for ferry's file types; `type` is the base type.
QuantType mix_type(State& qs, QuantType type, const MixTensor& t, const MixOptions& o) {
  const bool q4_k_m = o.file_type == LlamaFileType::kMostlyQ4_K_M;
  const std::uint64_t nx = t.dims[0];
  const bool output = t.name == "output.weight" || (!qs.has_output && t.name == "token_embd.weight");
  if (o.file_type == LlamaFileType::kMostlyMXFP4_MOE) {  // its own mix (quant_mix.h)
    type = !output && t.dims.size() > 2 && t.dims[2] > 1 ? QuantType::kMXFP4 : QuantType::kQ8_0;
  } else if (output) {
    if (nx % quant_traits(type).block_elems != 0) {
      type = QuantType::kQ8_0;
    } else if (type != QuantType::kQ8_0) {
      type = QuantType::kQ6_K;
    }
  } else if (t.name == "token_embd.weight") {
    // only the IQ and TQ file types change it
  } else if (contains(t.name, "attn_v.weight")) {
    if (q4_k_m && use_more_bits(qs.i_attention_wv, qs.n_attention_wv)) type = QuantType::kQ6_K;
    if (o.n_expert == 8) type = QuantType::kQ8_0;  // "for the 8-expert model, bumping this to Q8_0 trades just ~128MB"
    ++qs.i_attention_wv;
  } else if (contains(t.name, "attn_k.weight")) {
    if (o.n_expert == 8) type = QuantType::kQ8_0;
  } else if (contains(t.name, "attn_q.weight")) {
    // only the IQ3 file types change it
  } else if (contains(t.name, "ffn_down")) {
    int i_layer = qs.i_ffn_down;
    if (std::max(1, o.n_expert) > 1) {  // experts: the layer from the name (layer_info)
      i_layer = layer_of(t.name);
      FERRY_REQUIRE(i_layer >= 0 && i_layer < o.n_layer, "tensor '", t.name, "': no layer in [0, ", o.n_layer,
                    ") in its name");
    }
    if (q4_k_m && use_more_bits(i_layer, o.n_layer)) type = QuantType::kQ6_K;
    ++qs.i_ffn_down;
  } else if (contains(t.name, "attn_output.weight")) {
    if (o.n_expert == 8 && q4_k_m) type = QuantType::kQ5_K;
  }
  // ffn_gate and ffn_up change only in the IQ3_XS file type.

  if (nx % quant_traits(type).block_elems != 0) {
    switch (type) {
      case QuantType::kQ4_K: type = QuantType::kQ5_0; break;
      case QuantType::kQ6_K: type = QuantType::kQ8_0; break;
      case QuantType::kQ5_K: type = QuantType::kQ5_1; break;
      default:
        FERRY_THROW(InvalidArgument, "tensor '", t.name, "' has rows of ", nx, " weights, not whole ", quant_name(type),
                    " blocks of ", quant_traits(type).block_elems, " (llama-quantize refuses it too)");
    }
    if (nx % quant_traits(type).block_elems != 0) type = QuantType::kF16;
  }
  return type;
}

}  // namespace

std::optional<LlamaFileType> parse_llama_file_type(std::string_view name) {
  std::string upper(name);
  for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (upper == "Q4_K") upper = "Q4_K_M";  // llama-quantize's alias
  if (upper == "MXFP4") upper = "MXFP4_MOE";  // ferry's (llama-quantize has no plain MXFP4 file type)
  for (const auto& e : kFileTypes)
    if (upper == e.name) return e.type;
  return std::nullopt;
}

const char* llama_file_type_names() { return "F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q4_K_M, Q6_K, MXFP4, MXFP4_MOE"; }

const char* llama_file_type_name(LlamaFileType type) {
  for (const auto& e : kFileTypes)
    if (e.type == type) return e.name;
  return "?";
}

QuantType llama_file_type_base(LlamaFileType type) {
  for (const auto& e : kFileTypes)
    if (e.type == type) return e.base;
  FERRY_THROW(InternalError, "llama file type ", static_cast<std::uint32_t>(type), " has no base type");
}

bool gguf_tensor_order(const std::string& a, const std::string& b) {
  const int la = layer_of(a), lb = layer_of(b);
  if (la != lb) return la < lb;
  return a < b;
}

std::vector<QuantType> choose_tensor_types(const std::vector<MixTensor>& tensors, const MixOptions& o) {
  const QuantType base = llama_file_type_base(o.file_type);
  State qs;
  for (const MixTensor& t : tensors) {
    FERRY_REQUIRE(!t.dims.empty(), "tensor '", t.name, "' has no dimensions");
    if (contains(t.name, "attn_v.weight") || contains(t.name, "attn_qkv.weight") || contains(t.name, "attn_kv_b.weight"))
      ++qs.n_attention_wv;
    else if (t.name == "output.weight")
      qs.has_output = true;
  }
  std::vector<std::size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return gguf_tensor_order(tensors[a].name, tensors[b].name); });
  std::vector<QuantType> types(tensors.size(), QuantType::kF32);
  for (std::size_t k : order) {
    const MixTensor& t = tensors[k];
    if (!is_quantized_tensor(t)) continue;  // stays float32, as converted
    QuantType type = base;
    if (!o.pure && quantized(base)) type = mix_type(qs, type, t, o);
    if (!quant_row_fits(type, t.dims[0]))  // --pure or a float type: no fallback (llama.cpp aborts)
      FERRY_THROW(InvalidArgument, "tensor '", t.name, "' has rows of ", t.dims[0], " weights, not whole ",
                  quant_name(type), " blocks of ", quant_traits(type).block_elems);
    types[k] = type;
  }
  return types;
}

}  // namespace ferry::moe::quant
