// gpt-oss (moe/model/family_gpt_oss.cc): its released config.json read key by key, its refusals,
// its fused experts read apart, the engine against the reference forward, and a mutation test:
// the sliding window changes the logits of the positions past it only, and only through the
// sliding layers; the attention sinks change every position's.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include "core/error.h"
#include "moe/engine/engine.h"
#include "moe/model/checkpoint.h"
#include "moe/model/config.h"
#include "moe/model/decoder_ops.h"
#include "moe/model/family.h"
#include "moe/model/fused_experts.h"
#include "moe/model/reference_model.h"
#include "moe/model/safetensors.h"
#include "moe/model/tiny_model.h"
#include "engine_test_util.h"
#include "moe_test_util.h"

namespace ferry::moe {
namespace {

using testing::TempDir;

// openai/gpt-oss-20b's config.json as released.
nlohmann::json gpt_oss_20b_released() {
  nlohmann::json j = nlohmann::json::parse(R"({
    "architectures": ["GptOssForCausalLM"], "attention_bias": true, "attention_dropout": 0.0,
    "eos_token_id": 200002, "experts_per_token": 4, "head_dim": 64, "hidden_act": "silu", "hidden_size": 2880,
    "initial_context_length": 4096, "initializer_range": 0.02, "intermediate_size": 2880,
    "max_position_embeddings": 131072, "model_type": "gpt_oss", "num_attention_heads": 64,
    "num_experts_per_tok": 4, "num_hidden_layers": 24, "num_key_value_heads": 8, "num_local_experts": 32,
    "output_router_logits": false, "pad_token_id": 199999,
    "quantization_config": {"modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                            "model.embed_tokens", "lm_head"], "quant_method": "mxfp4"},
    "rms_norm_eps": 1e-05, "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0,
    "original_max_position_embeddings": 4096, "rope_type": "yarn", "truncate": false}, "rope_theta": 150000,
    "router_aux_loss_coef": 0.9, "sliding_window": 128, "swiglu_limit": 7.0, "tie_word_embeddings": false,
    "transformers_version": "4.55.0.dev0", "use_cache": true, "vocab_size": 201088})");
  nlohmann::json types = nlohmann::json::array();
  for (int l = 0; l < 24; ++l) types.push_back(l % 2 == 0 ? "sliding_attention" : "full_attention");
  j["layer_types"] = types;
  return j;
}

std::string error_of(const nlohmann::json& j) {
  try {
    config_from_json(j, "cfg");
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

TEST(GptOss, ReleasedConfigIsReadKeyByKey) {
  nlohmann::json j = gpt_oss_20b_released();
  const MoeConfig mx = config_from_json(j, "20b");  // MXFP4 experts (gpt_oss_mxfp4_test.cc)
  EXPECT_TRUE(mx.mxfp4_experts);
  EXPECT_TRUE(config_from_json(config_to_json(mx), "again").mxfp4_experts);
  j.erase("quantization_config");  // a dequantized (bf16) checkpoint
  const MoeConfig c = config_from_json(j, "20b");
  EXPECT_FALSE(c.mxfp4_experts);
  EXPECT_EQ(c.model_type, "gpt_oss");
  EXPECT_EQ(c.num_layers, 24);
  EXPECT_EQ(c.num_experts, 32);
  EXPECT_EQ(c.top_k, 4);
  EXPECT_EQ(c.hidden_size, 2880);
  EXPECT_EQ(c.intermediate_size, 2880);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.num_heads, 64);
  EXPECT_EQ(c.num_kv_heads, 8);
  EXPECT_EQ(c.sliding_window, 128);
  for (int l = 0; l < 24; ++l) EXPECT_EQ(c.windowed(l), l % 2 == 0) << l;
  EXPECT_TRUE(c.qkv_bias && c.o_bias && c.attn_sinks && c.router_logit_bias && c.expert_bias);
  EXPECT_TRUE(c.norm_topk_prob);
  EXPECT_EQ(c.scoring_func, "softmax");
  EXPECT_EQ(c.swiglu_limit, 7.0);
  EXPECT_EQ(c.swiglu_alpha, 1.702);
  EXPECT_EQ(c.rope_theta, 150000);
  EXPECT_EQ(c.rope_scaling.type, "yarn");
  EXPECT_EQ(c.rope_scaling.factor, 32);
  EXPECT_FALSE(c.rope_scaling.truncate);
  EXPECT_NEAR(rope_attention_factor(c), 0.1 * std::log(32.0) + 1, 1e-12);  // HF's attention_scaling
  EXPECT_EQ(yarn_softmax_factor(c), 1.0);
  EXPECT_FALSE(c.tie_word_embeddings);
  const MoeConfig again = config_from_json(config_to_json(c), "again");  // written back as read
  EXPECT_EQ(again.full_attention_layers, c.full_attention_layers);
  EXPECT_FALSE(again.rope_scaling.truncate);
  EXPECT_EQ(again.sliding_window, 128);
  // Without layer_types and rope_scaling: GptOssConfig's defaults (sliding first, YaRN x32).
  j.erase("layer_types");
  j.erase("rope_scaling");
  const MoeConfig d = config_from_json(j, "defaults");
  EXPECT_EQ(d.full_attention_layers, c.full_attention_layers);
  EXPECT_EQ(d.rope_scaling.type, "yarn");
  EXPECT_EQ(d.rope_scaling.original_max_position_embeddings, 4096);
  EXPECT_FALSE(d.rope_scaling.truncate);
}

TEST(GptOss, ValuesFerryDoesNotImplementAreRefusedByName) {
  struct Case {
    const char* key;
    nlohmann::json value;  // null: removed
    const char* named;
  };
  const Case cases[] = {
      {"num_local_experts", nullptr, "num_local_experts"},
      {"experts_per_token", 2, "experts_per_token"},
      {"layer_types", {"sliding_attention"}, "layer_types"},
      {"sliding_window", 0, "sliding_window"},
      {"swiglu_limit", -1.0, "swiglu_limit"},
      {"swiglu_alpha", 0.0, "swiglu_alpha"},
      {"quantization_config", {{"quant_method", "fp8"}}, "quant_method 'fp8' is not one ferry reads"},
      // A module list that keeps the experts out of MXFP4 (HF matches each entry at the name's start).
      {"quantization_config",
       {{"quant_method", "mxfp4"}, {"modules_to_not_convert", {"lm_head", "model.layers.*.mlp.experts"}}},
       "modules_to_not_convert 'model.layers.*.mlp.experts' keeps the experts (model.layers.0.mlp.experts)"},
      {"quantization_config", {{"quant_method", "mxfp4"}, {"modules_to_not_convert", {"model.layers.3"}}},
       "'model.layers.3' keeps the experts (model.layers.3.mlp.experts)"},
      {"quantization_config", {{"quant_method", "mxfp4"}, {"modules_to_not_convert", "lm_head"}}, "list of module names"},
      {"quantization_config", {{"quant_method", "mxfp4"}, {"modules_to_not_convert", {"(lm_head"}}},
       "'(lm_head' is not a pattern"},
      {"hidden_size", 2896, "MXFP4 experts (quantization_config mxfp4) need hidden_size and intermediate_size multiples "
                            "of 32, got 2896 and 2880"},
      {"rope_scaling", {{"rope_type", "yarn"}, {"factor", 32.0}, {"truncate", "no"}}, "truncate"},
      {"n_shared_experts", 1, "key 'n_shared_experts' is not implemented for model_type 'gpt_oss'"},
  };
  for (const Case& k : cases) {
    nlohmann::json j = gpt_oss_20b_released();
    if (std::string(k.key) != "hidden_size") j.erase("quantization_config");
    if (k.value.is_null()) j.erase(k.key);
    else j[k.key] = k.value;
    if (std::string(k.key) == "layer_types") {
      nlohmann::json t = j["layer_types"];
      t[3] = "chunked_attention";
      j["layer_types"] = t;
    }
    EXPECT_NE(error_of(j).find(k.named), std::string::npos) << k.key << ": " << error_of(j);
  }
}

// A tiny gpt-oss: 2 layers (sliding, full), window 4, every bias and the sinks.
MoeConfig tiny_gpt_oss() {
  MoeConfig c = testing::tiny_config();
  c.model_type = "gpt_oss";
  c.num_layers = 2;
  c.sliding_window = 4;
  prepare_tiny_config(c);
  return tiny_model_config(c);
}

// HF's fused layout on disk, read apart as llama.cpp's converter splits it: expert e's gate is
// gate_up_proj[e][:, 0::2] transposed, its up the odd columns, its down down_proj[e] transposed;
// the biases' even and odd columns. MXFP4 experts (*_blocks) without the quantization_config that
// announces them are refused by name.
TEST(GptOss, FusedExpertsAreReadApart) {
  TempDir dir;
  TinyModelOptions o;
  o.config = tiny_gpt_oss();
  o.write.dtype = DType::kBF16;
  make_tiny_model(dir / "m", o);
  const MoeConfig& c = o.config;
  const std::int64_t E = c.num_experts, H = c.hidden_size, I = c.intermediate_size;
  const SafetensorsFile f = SafetensorsFile::open(dir / "m/model.safetensors");
  const TensorInfo& gu = f.at("model.layers.1.mlp.experts.gate_up_proj");
  EXPECT_EQ(gu.shape, std::vector<std::int64_t>({E, H, 2 * I}));
  EXPECT_EQ(f.at("model.layers.1.mlp.experts.down_proj").shape, std::vector<std::int64_t>({E, I, H}));
  EXPECT_EQ(f.at("model.layers.1.mlp.experts.gate_up_proj_bias").shape, std::vector<std::int64_t>({E, 2 * I}));
  EXPECT_EQ(f.at("model.layers.1.mlp.router.bias").shape, std::vector<std::int64_t>({E}));
  EXPECT_EQ(f.at("model.layers.0.self_attn.sinks").shape, std::vector<std::int64_t>({c.num_heads}));
  EXPECT_EQ(f.find("model.layers.1.mlp.experts.3.gate_proj.weight"), nullptr);
  std::vector<float> fused(static_cast<std::size_t>(E * H * 2 * I));
  convert_to_f32(gu.dtype, f.data(gu), fused.data(), fused.size());
  const auto ck = Checkpoint::open(dir / "m");
  TensorNames n(c);
  std::vector<float> gate(static_cast<std::size_t>(I * H)), up(gate.size()), bias(static_cast<std::size_t>(E * I));
  ck->read_f32(n.expert(1, 3, 1), {I, H}, gate.data());
  ck->read_f32(n.expert(1, 3, 3), {I, H}, up.data());
  for (std::int64_t i = 0; i < I; ++i)
    for (std::int64_t h = 0; h < H; ++h) {
      ASSERT_EQ(gate[i * H + h], fused[(3 * H + h) * 2 * I + 2 * i]) << i << " " << h;
      ASSERT_EQ(up[i * H + h], fused[(3 * H + h) * 2 * I + 2 * i + 1]) << i << " " << h;
    }
  const TensorInfo& gub = f.at("model.layers.1.mlp.experts.gate_up_proj_bias");
  std::vector<float> fused_bias(static_cast<std::size_t>(E * 2 * I));
  convert_to_f32(gub.dtype, f.data(gub), fused_bias.data(), fused_bias.size());
  ck->read_f32(n.expert_bias(1, 3), {E, I}, bias.data());
  for (std::int64_t e = 0; e < E; ++e)
    for (std::int64_t i = 0; i < I; ++i) ASSERT_EQ(bias[e * I + i], fused_bias[e * 2 * I + 2 * i + 1]);
  EXPECT_THROW(ck->read_f32(n.expert(1, 3, 1), {H, I}, gate.data()), FormatError);  // shapes are checked
  try {
    ck->at(n.expert(1, 3, 1));  // no bytes of its own: --link file cannot stream it
    ADD_FAILURE() << "a fused part read in place";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("part of the fused"), std::string::npos) << e.what();
  }

  // MXFP4 experts without config.json's quantization_config.
  std::vector<NamedTensor> tensors = fuse_expert_tensors(c, random_tensors(c, 1));
  for (NamedTensor& t : tensors)
    if (t.name == "model.layers.0.mlp.experts.gate_up_proj") t.name += "_blocks";
  write_checkpoint(dir / "mxfp4", c, tensors, {});
  try {
    ReferenceModel::load(*Checkpoint::open(dir / "mxfp4"));
    ADD_FAILURE() << "MXFP4 experts loaded";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("holds MXFP4 experts, but config.json has no quantization_config"),
              std::string::npos) << e.what();
  }
}

// The engine (prompt, then one token a step) computes the reference forward's logits on a tiny
// gpt-oss, in float32 and with its experts in Q8_0 (the biases resident beside them).
TEST(GptOss, EngineEqualsTheReferenceForward) {
  torch::set_num_threads(1);
  TempDir dir;
  TinyModelOptions o;
  o.config = tiny_gpt_oss();
  o.config.hidden_size = 64;  // whole Q8_0 blocks
  o.config.intermediate_size = 64;
  make_tiny_model(dir / "m", o);
  const TokenBatch seqs = testing::random_tokens(2, 12, 9);
  const std::vector<float> expect = testing::reference_logits(dir / "m", seqs);
  for (const char* weights : {"", "Q8_0"}) {
    EngineOptions eo;
    eo.device_mem = "50%";
    eo.link = "none";
    eo.weights = weights;
    auto eng = MoeEngine::open(dir / "m", eo);
    const double diff = testing::max_diff_vs(*eng, seqs, expect, 6);
    EXPECT_LT(diff, std::string(weights).empty() ? 1e-4 : 5e-2) << weights;
  }
}

// Logits of every position of `seqs` by the reference forward on `dir`'s model written with
// `config` and the weights of `seed` (the sinks replaced by `sink` when given).
std::vector<float> logits_of(const std::string& dir, const MoeConfig& config, const TokenBatch& seqs,
                             float sink = std::numeric_limits<float>::quiet_NaN()) {
  std::vector<NamedTensor> tensors = random_tensors(config, 3);
  if (!std::isnan(sink))
    for (NamedTensor& t : tensors)
      if (t.name.find("self_attn.sinks") != std::string::npos) std::fill(t.values.begin(), t.values.end(), sink);
  write_checkpoint(dir, config, fuse_expert_tensors(config, std::move(tensors)), {});
  const std::vector<float> ref = testing::reference_logits(dir, seqs);
  EngineOptions eo;
  eo.device_mem = "100%";
  eo.link = "none";
  auto eng = MoeEngine::open(dir, eo);
  EXPECT_LT(testing::max_diff_vs(*eng, seqs, ref, static_cast<int>(seqs[0].size())), 1e-4);
  return ref;
}

// The largest |a - b| at each position of a [T][V] pair.
std::vector<double> position_diffs(const std::vector<float>& a, const std::vector<float>& b, int T) {
  const std::size_t V = a.size() / static_cast<std::size_t>(T);
  std::vector<double> d(static_cast<std::size_t>(T), 0.0);
  for (std::size_t i = 0; i < a.size(); ++i) d[i / V] = std::max<double>(d[i / V], std::abs(a[i] - b[i]));
  return d;
}

// Mutations: the window widened to the whole sequence changes the positions from the window on
// and none before; windowing the full layer too changes those positions again (the full layer
// was not windowed) and none before; a window of any width leaves a model of full layers alone;
// sinks of -1e30 (none: weights are finite) change every position.
TEST(GptOss, SlidingWindowAndSinksChangeTheLogitsWhereTheyShould) {
  torch::set_num_threads(1);
  TempDir dir;
  const MoeConfig base = tiny_gpt_oss();  // layer 0 sliding (window 4), layer 1 full
  ASSERT_TRUE(base.windowed(0));
  ASSERT_FALSE(base.windowed(1));
  const int T = 12, W = base.sliding_window;
  const TokenBatch seqs = testing::random_tokens(1, T, 4);
  const std::vector<float> a = logits_of(dir / "base", base, seqs);
  auto expect_changed_from = [&](const std::vector<float>& b, int first, const char* what) {
    const std::vector<double> d = position_diffs(a, b, T);
    for (int t = 0; t < T; ++t) {
      if (t < first)
        EXPECT_LT(d[t], 1e-5) << what << ": position " << t << " changed";
      else
        EXPECT_GT(d[t], 1e-3) << what << ": position " << t << " unchanged";
    }
  };
  MoeConfig wide = base;
  wide.sliding_window = T;
  expect_changed_from(logits_of(dir / "wide", wide, seqs), W, "window widened");
  MoeConfig all_windowed = base;
  all_windowed.full_attention_layers.clear();
  expect_changed_from(logits_of(dir / "all", all_windowed, seqs), W, "full layer windowed");
  MoeConfig full = base;
  full.full_attention_layers = {0, 1};
  const std::vector<float> f = logits_of(dir / "full", full, seqs);
  full.sliding_window = 2;
  const std::vector<double> same = position_diffs(f, logits_of(dir / "full2", full, seqs), T);
  for (int t = 0; t < T; ++t) EXPECT_LT(same[t], 1e-6) << "a window changed a model without sliding layers";
  expect_changed_from(logits_of(dir / "nosink", base, seqs, -1e30f), 0, "sinks");  // exp(sink) = 0: none
}

}  // namespace
}  // namespace ferry::moe
