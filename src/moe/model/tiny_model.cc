#include "moe/model/tiny_model.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/metrics.h"
#include "core/units.h"
#include "moe/model/dtype.h"
#include "moe/model/fused_experts.h"
#include "moe/model/safetensors.h"

namespace ferry::moe {

namespace fs = std::filesystem;

namespace {

void add_tensor(SafetensorsWriter& w, const NamedTensor& t, DType dtype) {
  if (t.bytes.empty())
    w.add_f32(t.name, dtype, t.shape, t.values.data());
  else
    w.add(t.name, DType::kU8, t.shape, t.bytes.data(), t.bytes.size());
}

std::uint64_t element_count(const NamedTensor& t) { return t.values.size() + t.bytes.size(); }

}  // namespace

void write_checkpoint(const std::string& dir, const MoeConfig& config, const std::vector<NamedTensor>& tensors,
                      const CheckpointWriteOptions& options) {
  FERRY_REQUIRE_GE(options.shards, 1, "--shards");
  make_dirs(dir);
  write_json_file((fs::path(dir) / "config.json").string(), config_to_json(config));
  const int shards = std::min<int>(options.shards, static_cast<int>(tensors.size()));
  if (shards <= 1) {
    SafetensorsWriter w;
    w.set_metadata("format", "pt");
    for (const auto& t : tensors) add_tensor(w, t, options.dtype);
    fs::remove(fs::path(dir) / "model.safetensors.index.json");
    w.write((fs::path(dir) / "model.safetensors").string());
    return;
  }
  // Contiguous runs of tensors per shard, balanced by bytes.
  std::uint64_t total = 0;
  for (const auto& t : tensors) total += element_count(t);
  nlohmann::json weight_map = nlohmann::json::object();
  std::size_t i = 0;
  for (int s = 0; s < shards; ++s) {
    char name[64];
    std::snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", s + 1, shards);
    SafetensorsWriter w;
    w.set_metadata("format", "pt");
    const std::uint64_t target = total * static_cast<std::uint64_t>(s + 1) / static_cast<std::uint64_t>(shards);
    std::uint64_t done = 0;
    for (std::size_t k = 0; k < i; ++k) done += element_count(tensors[k]);
    while (i < tensors.size() && (done < target || s == shards - 1)) {
      const auto& t = tensors[i++];
      add_tensor(w, t, options.dtype);
      weight_map[t.name] = name;
      done += element_count(t);
    }
    w.write((fs::path(dir) / name).string());
  }
  fs::remove(fs::path(dir) / "model.safetensors");
  write_json_file((fs::path(dir) / "model.safetensors.index.json").string(),
                  {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}});
}

namespace {

// MLA's attention tensors of layer l, as HF names them (moe/model/mla.h).
template <typename Gen>
void mla_specs(const MoeConfig& c, int l, Gen& gen) {
  TensorNames n(c);
  const std::int64_t H = c.hidden_size, Q = c.q_lora_rank, L = c.kv_lora_rank, R = c.rotary_dims();
  const std::int64_t q_rows = std::int64_t{c.num_heads} * c.head_dim;
  auto stddev = [](std::int64_t fan_in) { return 1.0 / std::sqrt(static_cast<double>(fan_in)); };
  if (Q > 0) {
    gen(n.mla(l, "q_a_proj"), {Q, H}, stddev(H));
    gen(n.mla(l, "q_a_layernorm"), {Q}, 0.05, 1.0);
    gen(n.mla(l, "q_b_proj"), {q_rows, Q}, stddev(Q));
  } else {
    gen(n.mla(l, "q_proj"), {q_rows, H}, stddev(H));
  }
  gen(n.mla(l, "kv_a_proj_with_mqa"), {L + R, H}, stddev(H));
  gen(n.mla(l, "kv_a_layernorm"), {L}, 0.05, 1.0);
  gen(n.mla(l, "kv_b_proj"), {std::int64_t{c.num_heads} * (c.head_dim - R + c.v_head_dim), L}, stddev(L));
}

}  // namespace

std::vector<RandomTensorSpec> random_tensor_specs(const MoeConfig& c) {
  TensorNames n(c);
  std::vector<RandomTensorSpec> out;
  auto gen = [&](const std::string& name, std::vector<std::int64_t> shape, double stddev, double mean = 0) {
    out.push_back({name, std::move(shape), mean, stddev});
  };
  const std::int64_t H = c.hidden_size, I = c.intermediate_size, D = c.head_dim, V = c.vocab_size;
  const double h_std = 1.0 / std::sqrt(static_cast<double>(H));
  gen(n.embed(), {V, H}, 1.0);
  for (int l = 0; l < c.num_layers; ++l) {
    gen(n.attn_norm(l), {H}, 0.05, 1.0);
    if (c.mla()) {
      mla_specs(c, l, gen);
    } else {
      gen(n.attn(l, 'q'), {c.num_heads * D, H}, h_std);
      gen(n.attn(l, 'k'), {c.num_kv_heads * D, H}, h_std);
      gen(n.attn(l, 'v'), {c.num_kv_heads * D, H}, h_std);
    }
    const std::int64_t O = std::int64_t{c.num_heads} * c.attn_value_width();
    gen(n.attn(l, 'o'), {H, O}, 1.0 / std::sqrt(static_cast<double>(O)));
    if (c.qkv_bias) {
      gen(n.attn(l, 'q', "bias"), {c.num_heads * D}, 0.02);
      gen(n.attn(l, 'k', "bias"), {c.num_kv_heads * D}, 0.02);
      gen(n.attn(l, 'v', "bias"), {c.num_kv_heads * D}, 0.02);
    }
    if (c.o_bias) gen(n.attn(l, 'o', "bias"), {H}, 0.02);
    if (c.attn_sinks) gen(n.attn_sinks(l), {c.num_heads}, 1.0);  // of the scores' size: they matter
    if (!c.qk_norm.empty()) {
      const bool head = c.qk_norm == "head";
      gen(n.qk_norm(l, 'q'), {head ? D : c.num_heads * D}, 0.05, 1.0);
      gen(n.qk_norm(l, 'k'), {head ? D : c.num_kv_heads * D}, 0.05, 1.0);
    }
    gen(n.ffn_norm(l), {H}, 0.05, 1.0);
    if (c.moe_layer(l) < 0) {  // a dense layer
      const std::int64_t F = c.dense_intermediate_size;
      gen(n.dense_mlp(l, 1), {F, H}, h_std);
      gen(n.dense_mlp(l, 2), {H, F}, 1.0 / std::sqrt(static_cast<double>(F)));
      gen(n.dense_mlp(l, 3), {F, H}, h_std);
      continue;
    }
    gen(n.router(l), {c.num_experts, H}, h_std);
    if (c.router_bias) gen(n.router_bias(l), {c.num_experts}, 0.1);  // steers the choice among near-equal sigmoids
    if (c.router_logit_bias) gen(n.router(l, "bias"), {c.num_experts}, 0.1);
    for (int e = 0; e < c.num_experts; ++e) {
      gen(n.expert(l, e, 1), {I, H}, h_std);
      gen(n.expert(l, e, 2), {H, I}, 1.0 / std::sqrt(static_cast<double>(I)));
      gen(n.expert(l, e, 3), {I, H}, h_std);
    }
    if (c.expert_bias) {
      gen(n.expert_bias(l, 1), {c.num_experts, I}, 0.1);
      gen(n.expert_bias(l, 3), {c.num_experts, I}, 0.1);
      gen(n.expert_bias(l, 2), {c.num_experts, H}, 0.1);
    }
    if (c.shared_expert_intermediate_size > 0) {
      const std::int64_t S = c.shared_expert_intermediate_size;
      gen(n.shared_expert(l, 1), {S, H}, h_std);
      gen(n.shared_expert(l, 2), {H, S}, 1.0 / std::sqrt(static_cast<double>(S)));
      gen(n.shared_expert(l, 3), {S, H}, h_std);
      if (c.shared_expert_gate) gen(n.shared_expert_gate(l), {1, H}, h_std);
    }
  }
  gen(n.final_norm(), {H}, 0.05, 1.0);
  if (!c.tie_word_embeddings) gen(n.lm_head(), {V, H}, h_std);
  return out;
}

std::vector<NamedTensor> random_tensors(const MoeConfig& c, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<NamedTensor> out;
  for (RandomTensorSpec& spec : random_tensor_specs(c)) {
    std::int64_t numel = 1;
    for (auto d : spec.shape) numel *= d;
    std::normal_distribution<float> dist(static_cast<float>(spec.mean), static_cast<float>(spec.stddev));
    NamedTensor t{std::move(spec.name), std::move(spec.shape), std::vector<float>(static_cast<std::size_t>(numel))};
    for (auto& v : t.values) v = dist(rng);
    out.push_back(std::move(t));
  }
  return out;
}

MoeConfig tiny_model_config(const MoeConfig& config) {
  MoeConfig c = config;
  if (c.tokenizer.empty() && c.vocab_size == 256) c.tokenizer = "byte";
  c.validate("make-tiny");
  // Through config.json and back: the family's semantics (biases, q/k norms, which layers are
  // dense) are those ferry reads from the file it writes.
  return config_from_json(config_to_json(c), "make-tiny");
}

void make_tiny_model(const std::string& dir, const TinyModelOptions& options) {
  const MoeConfig c = tiny_model_config(options.config);
  // The weights are generated in memory in float32 and then written: refuse sizes the machine
  // cannot hold instead of failing in an allocation.
  const double f32_bytes = c.parameter_count() * 4;
  const double file_bytes = c.parameter_count() * static_cast<double>(dtype_size(options.write.dtype));
  const double ram = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE));
  FERRY_REQUIRE(f32_bytes < ram, "make-tiny: this shape has ", c.parameter_count(), " weights (",
                format_bytes(f32_bytes), " in float32), more than this machine's ", format_bytes(ram), " of memory");
  std::error_code ec;
  fs::path parent = fs::absolute(dir).parent_path();
  while (!parent.empty() && !fs::exists(parent, ec)) parent = parent.parent_path();
  const auto space = fs::space(parent, ec);
  FERRY_REQUIRE(ec || file_bytes < static_cast<double>(space.available), "make-tiny: the model's ",
                format_bytes(file_bytes), " of weights do not fit the ", format_bytes(static_cast<double>(space.available)),
                " free on ", parent.string());
  write_checkpoint(dir, c, fuse_expert_tensors(c, random_tensors(c, options.seed)), options.write);
}

}  // namespace ferry::moe
