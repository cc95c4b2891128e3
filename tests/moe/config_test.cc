// config.json as Hugging Face writes it for Mixtral, Qwen2-MoE, Qwen3-MoE, OLMoE, DeepSeek-MoE and GLM-4.5:
// every key that changes the math is honoured as HF's modeling code defines it, or refused with
// one error naming it; the weights are resolved as HF resolves them (tied heads, attention biases
// per family, dense layers among the MoE ones).
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/types.h>
#include <torch/utils.h>

#include "core/error.h"
#include "moe/model/checkpoint.h"
#include "moe/model/config.h"
#include "moe/model/decoder_ops.h"
#include "moe/model/tiny_model.h"
#include "moe/model/weights.h"
#include "moe_test_util.h"

namespace ferry::moe {
namespace {

using testing::TempDir;

nlohmann::json base(const std::string& family) {
  MoeConfig c = testing::tiny_config();
  c.model_type = family;
  nlohmann::json j = config_to_json(c);
  j.erase("ferry_tokenizer");
  return j;
}

// The error config_from_json gives for `j`, or "" when it loads.
std::string error_of(const nlohmann::json& j) {
  try {
    config_from_json(j, "cfg");
    return "";
  } catch (const FormatError& e) {
    return e.what();
  }
}

// A config.json nested 100,000 levels deep (a hostile file) is refused before it is parsed.
TEST(Config, DeepNestingIsRefusedBeforeParsing) {
  TempDir dir;
  std::ofstream(dir.path() + "/config.json") << "{\"a\": " << std::string(100000, '[') << std::string(100000, ']') << "}";
  try {
    load_config(dir.path());
    FAIL() << "loaded";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("deeper than 256 levels"), std::string::npos) << e.what();
  }
}

TEST(Config, KeysThatChangeTheMathAreRefusedByName) {
  struct Case {
    const char* family;
    const char* key;
    nlohmann::json value;
    const char* named;  // what the error must say
  };
  const Case cases[] = {
      {"mixtral", "hidden_act", "relu", "hidden_act = \"relu\" is not implemented"},
      {"mixtral", "rope_scaling", {{"type", "dynamic"}, {"factor", 2.0}}, "rope_scaling = "},
      {"mixtral", "rope_scaling", {{"rope_type", "linear"}, {"factor", 2.0}, {"beta_fast", 32}}, "field 'beta_fast'"},
      {"mixtral", "rope_scaling", {{"rope_type", "linear"}, {"factor", -2.0}}, "factor must be finite and greater than 0"},
      {"mixtral", "rope_scaling", {{"rope_type", "yarn"}, {"factor", 4.0}}, "rope_scaling yarn is implemented as DeepSeek"},
      {"mixtral", "rope_parameters", {{"rope_type", "llama3"}, {"rope_theta", 5e5}}, "rope_parameters = "},
      {"mixtral", "attention_bias", true, "key 'attention_bias' is not implemented for model_type 'mixtral'"},
      {"mixtral", "shared_expert_intermediate_size", 16, "key 'shared_expert_intermediate_size'"},
      {"mixtral", "quantization_config", {{"quant_method", "gptq"}}, "key 'quantization_config'"},
      {"qwen2_moe", "mlp_only_layers", {3}, "mlp_only_layers names layer 3, outside 0..2"},
      {"qwen2_moe", "decoder_sparse_step", 0, "decoder_sparse_step must be at least 1"},
      {"qwen3_moe", "use_sliding_window", true, "use_sliding_window = true is not implemented"},
      {"qwen3_moe", "shared_expert_intermediate_size", 16, "key 'shared_expert_intermediate_size'"},
      {"olmoe", "sliding_window", 16, "key 'sliding_window' is not implemented for model_type 'olmoe'"},
      {"olmoe", "clip_qkv", -1.0, "clip_qkv must be a number greater than 0"},
      {"deepseek", "scoring_func", "sigmoid", "scoring_func = \"sigmoid\" is not implemented"},
      {"deepseek", "head_dim", 16, "key 'head_dim' is not implemented for model_type 'deepseek'"},
      {"deepseek", "moe_layer_freq", 0, "moe_layer_freq at least 1"},
      {"mixtral", "num_hidden_layers", 1 << 20, "num_hidden_layers = 1048576 exceeds"},
      {"qwen2_moe", "layer_types", {"full_attention", "sliding_attention", "full_attention"}, "layer_types = "},
      {"qwen2_moe", "qkv_bias", false, "qkv_bias = false"},
  };
  for (const Case& c : cases) {
    nlohmann::json j = base(c.family);
    j[c.key] = c.value;
    const std::string e = error_of(j);
    EXPECT_NE(e.find(c.named), std::string::npos) << c.family << " " << c.key << ": " << e;
    EXPECT_NE(e.find("config 'cfg'"), std::string::npos) << e;
  }
}

TEST(Config, SlidingWindowsAsHfAppliesThem) {
  // Mixtral: every layer, when sliding_window is set.
  nlohmann::json m = base("mixtral");
  m["sliding_window"] = 16;
  MoeConfig c = config_from_json(m, "m");
  EXPECT_TRUE(c.windowed(0) && c.windowed(2));
  EXPECT_EQ(c.sliding_window, 16);
  m["sliding_window"] = nullptr;
  EXPECT_FALSE(config_from_json(m, "m").windowed(0));
  // Qwen2-MoE: only with use_sliding_window, from max_window_layers on.
  nlohmann::json q = base("qwen2_moe");
  q["sliding_window"] = 16;
  q["max_window_layers"] = 2;
  q["use_sliding_window"] = false;
  EXPECT_FALSE(config_from_json(q, "q").windowed(2));
  q["use_sliding_window"] = true;
  c = config_from_json(q, "q");
  EXPECT_FALSE(c.windowed(1));
  EXPECT_TRUE(c.windowed(2));
  EXPECT_EQ(config_from_json(config_to_json(c), "again").max_window_layers, 2);  // written back as read
  q["sliding_window"] = -3;
  EXPECT_NE(error_of(q).find("sliding_window must be greater than 0"), std::string::npos) << error_of(q);
}

TEST(Config, DenseLayersAsEachFamilyChoosesThem) {
  auto dense = [](nlohmann::json j, int layers) {
    j["num_hidden_layers"] = layers;
    return config_from_json(j, "cfg");
  };
  nlohmann::json q = base("qwen2_moe");
  q["mlp_only_layers"] = {1};
  MoeConfig c = dense(q, 3);
  EXPECT_EQ(c.dense_layers, std::vector<int>({1}));
  EXPECT_EQ(c.num_moe_layers(), 2);
  EXPECT_EQ(c.moe_layer(0), 0);
  EXPECT_EQ(c.moe_layer(1), -1);
  EXPECT_EQ(c.moe_layer(2), 1);
  EXPECT_EQ(c.decoder_layer(1), 2);
  EXPECT_EQ(c.dense_intermediate_size, q["intermediate_size"].get<int>());
  // Qwen: sparse iff (layer + 1) % decoder_sparse_step == 0 and not in mlp_only_layers.
  nlohmann::json q3 = base("qwen3_moe");
  q3["decoder_sparse_step"] = 2;
  EXPECT_EQ(dense(q3, 5).dense_layers, std::vector<int>({0, 2, 4}));
  // DeepSeek: MoE iff layer >= first_k_dense_replace and layer % moe_layer_freq == 0.
  nlohmann::json d = base("deepseek");
  d["first_k_dense_replace"] = 1;
  d["moe_layer_freq"] = 2;
  c = dense(d, 7);
  EXPECT_EQ(c.dense_layers, std::vector<int>({0, 1, 3, 5}));
  EXPECT_EQ(c.decoder_layer(2), 6);
  for (const MoeConfig& x : {c, dense(q, 3), dense(q3, 5)}) {  // written back as read
    const MoeConfig r = config_from_json(config_to_json(x), "again");
    EXPECT_EQ(r.dense_layers, x.dense_layers) << x.model_type;
    EXPECT_EQ(r.dense_intermediate_size, x.dense_intermediate_size) << x.model_type;
  }
  d["first_k_dense_replace"] = 7;
  try {
    dense(d, 7);
    ADD_FAILURE() << "loaded a model without MoE layers";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("every layer is dense"), std::string::npos) << e.what();
  }
}

TEST(Config, FamilyAttentionAndRouting) {
  const MoeConfig q2 = config_from_json(base("qwen2_moe"), "q2");
  EXPECT_TRUE(q2.qkv_bias && !q2.o_bias && q2.qk_norm.empty());
  nlohmann::json q3 = base("qwen3_moe");
  EXPECT_EQ(config_from_json(q3, "q3").qk_norm, "head");
  q3["attention_bias"] = true;
  EXPECT_TRUE(config_from_json(q3, "q3").qkv_bias && config_from_json(q3, "q3").o_bias);
  nlohmann::json o = base("olmoe");
  o["clip_qkv"] = 8.0;
  const MoeConfig co = config_from_json(o, "o");
  EXPECT_EQ(co.qk_norm, "full");
  EXPECT_EQ(co.clip_qkv, 8.0);
  EXPECT_FALSE(co.qkv_bias || co.o_bias);
  o["head_dim"] = 4;  // OLMoE's norms span hidden_size: heads x head_dim must equal it
  EXPECT_THROW(config_from_json(o, "o"), InvalidArgument);
  nlohmann::json d = base("deepseek");
  d["n_shared_experts"] = 2;
  d["norm_topk_prob"] = true;
  MoeConfig cd = config_from_json(d, "d");
  EXPECT_EQ(cd.shared_expert_intermediate_size, 2 * cd.intermediate_size);
  EXPECT_FALSE(cd.shared_expert_gate);
  EXPECT_TRUE(cd.norm_topk_prob);
  d["num_experts_per_tok"] = 1;  // DeepSeek's gate renormalises only when top_k > 1
  EXPECT_FALSE(config_from_json(d, "d").norm_topk_prob);
}

TEST(Config, DefaultValuesAndInertKeysLoad) {
  for (const char* family : {"mixtral", "qwen2_moe", "qwen3_moe", "olmoe", "deepseek"}) {
    nlohmann::json j = base(family);
    j["hidden_act"] = "silu";
    j["rope_scaling"] = nullptr;
    if (std::string(family) != "olmoe" && std::string(family) != "deepseek") j["sliding_window"] = nullptr;
    j["torch_dtype"] = "bfloat16";
    j["attention_dropout"] = 0.1;  // training only
    j["router_aux_loss_coef"] = 0.02;
    j["bos_token_id"] = 1;
    EXPECT_EQ(error_of(j), "") << family;
    j["rope_scaling"] = {{"rope_type", "default"}};
    EXPECT_EQ(error_of(j), "") << family;

  }
}

TEST(Config, RopeScalingAndActivationsAreRead) {
  nlohmann::json j = base("mixtral");
  j["hidden_act"] = "gelu_pytorch_tanh";
  j["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};
  MoeConfig c = config_from_json(j, "cfg");
  EXPECT_EQ(c.hidden_act, "gelu_pytorch_tanh");
  EXPECT_EQ(c.rope_scaling.type, "linear");
  EXPECT_EQ(c.rope_scaling.factor, 2.0);
  j.erase("rope_scaling");
  j["rope_parameters"] = {{"rope_type", "llama3"}, {"rope_theta", 5e5}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                          {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 64}};
  c = config_from_json(j, "cfg");
  EXPECT_EQ(c.rope_scaling.type, "llama3");
  EXPECT_EQ(c.rope_theta, 5e5);
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 64);
  EXPECT_EQ(config_from_json(config_to_json(c), "again").rope_scaling.factor, 8.0);  // written back as read
  j["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};
  EXPECT_NE(error_of(j).find("both rope_parameters and rope_scaling"), std::string::npos) << error_of(j);
}

TEST(Config, PerFamilyDefaultsAreHuggingFaces) {
  nlohmann::json m = base("mixtral"), q = base("qwen2_moe");
  for (auto* j : {&m, &q})
    for (const char* k : {"rope_theta", "rms_norm_eps", "max_position_embeddings", "norm_topk_prob"}) j->erase(k);
  const MoeConfig cm = config_from_json(m, "m"), cq = config_from_json(q, "q");
  EXPECT_EQ(cm.rope_theta, 1e6);
  EXPECT_EQ(cq.rope_theta, 1e4);
  EXPECT_EQ(cm.rms_norm_eps, 1e-5);
  EXPECT_EQ(cq.rms_norm_eps, 1e-6);
  EXPECT_EQ(cm.max_position_embeddings, 131072);
  EXPECT_EQ(cq.max_position_embeddings, 32768);
  EXPECT_TRUE(cm.norm_topk_prob);
  EXPECT_FALSE(cq.norm_topk_prob);
  // The newer layout: rope_parameters.rope_theta.
  q["rope_parameters"] = {{"rope_theta", 5e5}, {"rope_type", "default"}};
  EXPECT_EQ(config_from_json(q, "q").rope_theta, 5e5);
  // HF's Mixtral always renormalises its top-k weights, whatever the config says.
  m["norm_topk_prob"] = false;
  EXPECT_TRUE(config_from_json(m, "m").norm_topk_prob);
  q["norm_topk_prob"] = true;
  EXPECT_TRUE(config_from_json(q, "q").norm_topk_prob);
  // Qwen3-MoE, OLMoE and DeepSeek V1 (the last from deepseek-moe-16b's configuration).
  nlohmann::json q3 = base("qwen3_moe"), o = base("olmoe"), d = base("deepseek");
  for (auto* j : {&q3, &o, &d})
    for (const char* k : {"rope_theta", "rms_norm_eps", "max_position_embeddings", "norm_topk_prob"}) j->erase(k);
  q3.erase("moe_intermediate_size");
  d.erase("moe_intermediate_size");
  const MoeConfig c3 = config_from_json(q3, "q3"), co = config_from_json(o, "o"), cd = config_from_json(d, "d");
  EXPECT_EQ(c3.rope_theta, 1e4);
  EXPECT_EQ(c3.rms_norm_eps, 1e-6);
  EXPECT_EQ(c3.max_position_embeddings, 32768);
  EXPECT_EQ(c3.intermediate_size, 768);
  EXPECT_EQ(co.rope_theta, 1e4);
  EXPECT_EQ(co.rms_norm_eps, 1e-5);
  EXPECT_EQ(co.max_position_embeddings, 4096);
  EXPECT_EQ(cd.rope_theta, 1e4);
  EXPECT_EQ(cd.rms_norm_eps, 1e-6);
  EXPECT_EQ(cd.max_position_embeddings, 2048);
  EXPECT_EQ(cd.intermediate_size, 1407);
  for (const MoeConfig* c : {&c3, &co, &cd}) EXPECT_FALSE(c->norm_topk_prob) << c->model_type;
}

void set_config_key(const std::string& dir, const char* key, const nlohmann::json& value) {
  nlohmann::json j;
  std::ifstream(dir + "/config.json") >> j;
  j[key] = value;
  std::ofstream(dir + "/config.json") << j.dump();
}

TEST(Config, TiedEmbeddingsAreTheHeadEvenWithAStoredOne) {
  TempDir dir;
  TinyModelOptions o;
  o.config = testing::tiny_config();
  o.config.tie_word_embeddings = false;  // the file stores lm_head.weight
  make_tiny_model(dir.path(), o);
  set_config_key(dir.path(), "tie_word_embeddings", true);
  auto ck = Checkpoint::open(dir.path());
  ASSERT_TRUE(ck->contains(TensorNames(ck->config()).lm_head()));
  const DenseWeights w = load_dense_weights(*ck);
  EXPECT_TRUE(torch::equal(w.lm_head.values, w.embed.values));
}

TEST(Config, AttentionBiasesAsEachFamilyHasThem) {
  // Mixtral has none: a stored q/k/v bias is ignored, as HF ignores it.
  TempDir dir;
  MoeConfig c = testing::tiny_config();
  TensorNames n(c);
  auto tensors = random_tensors(c, 3);
  tensors.push_back({n.attn(0, 'q', "bias"), {c.num_heads * c.head_dim}, std::vector<float>(c.num_heads * c.head_dim, 1.0f)});
  write_checkpoint(dir / "mixtral", c, tensors, {});
  EXPECT_FALSE(load_dense_weights(*Checkpoint::open(dir / "mixtral")).layers[0].bq.defined());
  // Qwen2-MoE has them: make-tiny writes them, and a checkpoint without them is refused naming one.
  MoeConfig q = c;
  q.model_type = "qwen2_moe";
  TinyModelOptions o;
  o.config = q;
  make_tiny_model(dir / "qwen", o);
  EXPECT_TRUE(load_dense_weights(*Checkpoint::open(dir / "qwen")).layers[2].bv.defined());
  write_checkpoint(dir / "qwen-nobias", q, random_tensors(c, 3), {});  // Mixtral's tensor set: no biases
  try {
    load_dense_weights(*Checkpoint::open(dir / "qwen-nobias"));
    ADD_FAILURE() << "loaded a Qwen2-MoE checkpoint without q/k/v biases";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("q_proj.bias"), std::string::npos) << e.what();
  }
}

// GLM-4.5-Air's config.json as released.
nlohmann::json glm45_air_released() {
  return nlohmann::json::parse(R"({
    "architectures": ["Glm4MoeForCausalLM"], "attention_bias": true, "attention_dropout": 0.0,
    "pad_token_id": 151329, "eos_token_id": [151329, 151336, 151338], "head_dim": 128, "hidden_act": "silu",
    "hidden_size": 4096, "partial_rotary_factor": 0.5, "initializer_range": 0.02, "intermediate_size": 10944,
    "max_position_embeddings": 131072, "model_type": "glm4_moe", "moe_intermediate_size": 1408,
    "norm_topk_prob": true, "num_attention_heads": 96, "n_group": 1, "topk_group": 1, "n_routed_experts": 128,
    "n_shared_experts": 1, "routed_scaling_factor": 1.0, "num_experts_per_tok": 8, "first_k_dense_replace": 1,
    "num_hidden_layers": 46, "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_scaling": null,
    "rope_theta": 1000000, "num_nextn_predict_layers": 1, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
    "transformers_version": "4.54.0", "use_cache": true, "use_qk_norm": false, "vocab_size": 151552})");
}

// GLM-4.5-Air's config.json as released: every key read as modeling_glm4_moe.py reads it.
TEST(Config, Glm45AirAsReleased) {
  const nlohmann::json j = glm45_air_released();
  const MoeConfig c = config_from_json(j, "air");
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.rotary_dims(), 64);
  EXPECT_EQ(c.num_experts, 128);
  EXPECT_EQ(c.top_k, 8);
  EXPECT_EQ(c.intermediate_size, 1408);
  EXPECT_EQ(c.shared_expert_intermediate_size, 1408);
  EXPECT_FALSE(c.shared_expert_gate);
  EXPECT_EQ(c.dense_layers, std::vector<int>({0}));
  EXPECT_EQ(c.dense_intermediate_size, 10944);
  EXPECT_EQ(c.scoring_func, "sigmoid");
  EXPECT_TRUE(c.router_bias && c.norm_topk_prob);
  EXPECT_EQ(c.nextn_layers, 1);
  EXPECT_TRUE(c.qkv_bias && !c.o_bias && c.qk_norm.empty());
  const MoeConfig again = config_from_json(config_to_json(c), "again");  // written back as read
  EXPECT_EQ(again.rotary_dims(), 64);
  EXPECT_EQ(again.nextn_layers, 1);
  EXPECT_EQ(again.dense_layers, c.dense_layers);
  nlohmann::json bad = j;
  bad["partial_rotary_factor"] = 0.3;  // 38.4 dims
  EXPECT_NE(error_of(bad).find("partial_rotary_factor"), std::string::npos) << error_of(bad);
  bad = j;
  bad["n_group"] = 3;  // 128 experts do not split in 3
  EXPECT_THROW(config_from_json(bad, "air"), InvalidArgument);
  bad = j;
  bad["first_k_dense_replace"] = 46;
  EXPECT_NE(error_of(bad).find("first_k_dense_replace"), std::string::npos) << error_of(bad);
}

// route(): sigmoid scores, a bias that steers only the choice, the best group by its two best
// biased scores, weights renormalised and scaled; checked against the rule worked by hand.
TEST(Config, GroupLimitedSigmoidRouting) {
  MoeConfig c = testing::tiny_config();
  c.hidden_size = 8;
  c.num_experts = 8;
  c.top_k = 2;
  c.scoring_func = "sigmoid";
  c.n_group = 2;
  c.topk_group = 1;
  c.norm_topk_prob = true;
  c.routed_scaling_factor = 2.5;
  LayerWeights lw;
  lw.router = torch::eye(8);  // logits = the token itself
  lw.router_bias = torch::zeros({8});
  // Group 0 (experts 0-3) holds the single best logit (e0); group 1's two best sum higher.
  const std::vector<float> logit = {3.0f, -2.f, -2.f, -2.f, 1.0f, 0.9f, -2.f, -2.f};
  const auto m = torch::tensor(logit).view({1, 8});
  auto sig = [](float x) { return 1.f / (1.f + std::exp(-x)); };
  auto [w, i] = route(m, lw, c);
  EXPECT_EQ(i[0][0].item<std::int64_t>(), 4);  // group 1 chosen: sig(1) + sig(0.9) > sig(3) + sig(-2)
  EXPECT_EQ(i[0][1].item<std::int64_t>(), 5);
  EXPECT_NEAR(w[0][0].item<float>(), 2.5f * sig(1.0f) / (sig(1.0f) + sig(0.9f)), 1e-6);
  // A bias on expert 1 lifts group 0 (sig(3) + sig(-2) + 0.9 > group 1) and ranks e1 first
  // (0.12 + 0.9 > 0.95), but e1's weight stays its unbiased score.
  lw.router_bias[1] = 0.9f;
  std::tie(w, i) = route(m, lw, c);
  EXPECT_EQ(i[0][0].item<std::int64_t>(), 1);
  EXPECT_EQ(i[0][1].item<std::int64_t>(), 0);
  EXPECT_NEAR(w[0][0].item<float>(), 2.5f * sig(-2.f) / (sig(3.f) + sig(-2.f)), 1e-6);
}

// DeepSeek-V3's config.json as released.
nlohmann::json deepseek_v3_released() {
  return nlohmann::json::parse(R"({
    "architectures": ["DeepseekV3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
    "auto_map": {"AutoConfig": "configuration_deepseek.DeepseekV3Config"}, "aux_loss_alpha": 0.001,
    "bos_token_id": 0, "eos_token_id": 1, "ep_size": 1, "first_k_dense_replace": 3, "hidden_act": "silu",
    "hidden_size": 7168, "initializer_range": 0.02, "intermediate_size": 18432, "kv_lora_rank": 512,
    "max_position_embeddings": 163840, "model_type": "deepseek_v3", "moe_intermediate_size": 2048,
    "moe_layer_freq": 1, "n_group": 8, "n_routed_experts": 256, "n_shared_experts": 1, "norm_topk_prob": true,
    "num_attention_heads": 128, "num_experts_per_tok": 8, "num_hidden_layers": 61, "num_key_value_heads": 128,
    "num_nextn_predict_layers": 1, "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
    "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                            "weight_block_size": [128, 128]},
    "rms_norm_eps": 1e-06, "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0,
    "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096, "type": "yarn"}, "rope_theta": 10000,
    "routed_scaling_factor": 2.5, "scoring_func": "sigmoid", "seq_aux": true, "tie_word_embeddings": false,
    "topk_group": 4, "topk_method": "noaux_tc", "torch_dtype": "bfloat16", "transformers_version": "4.33.1",
    "use_cache": true, "v_head_dim": 128, "vocab_size": 129280})");
}

// As released, without its FP8 quantization_config (the BF16 conversion users run).
nlohmann::json deepseek_v3_released_bf16() {
  nlohmann::json j = deepseek_v3_released();
  j.erase("quantization_config");
  return j;
}

// DeepSeek-V3's config.json as released (its FP8 quantization_config is refused by name: ferry
// reads BF16 checkpoints and GGUF files), and Kimi-K2's model_type read as the same family.
TEST(Config, DeepSeekV3AsReleased) {
  nlohmann::json j = deepseek_v3_released();
  EXPECT_NE(error_of(j).find("key 'quantization_config'"), std::string::npos) << error_of(j);
  j.erase("quantization_config");
  const MoeConfig c = config_from_json(j, "v3");
  EXPECT_TRUE(c.mla());
  EXPECT_EQ(c.head_dim, 192);
  EXPECT_EQ(c.rotary_dims(), 64);
  EXPECT_EQ(c.kv_lora_rank, 512);
  EXPECT_EQ(c.q_lora_rank, 1536);
  EXPECT_EQ(c.v_head_dim, 128);
  EXPECT_EQ(c.kv_key_width(), 576);  // what the KV cache holds per token and layer
  EXPECT_EQ(c.kv_value_width(), 0);
  EXPECT_EQ(c.dense_layers, std::vector<int>({0, 1, 2}));
  EXPECT_EQ(c.num_experts, 256);
  EXPECT_EQ(c.shared_expert_intermediate_size, 2048);
  EXPECT_EQ(c.scoring_func, "sigmoid");
  EXPECT_TRUE(c.router_bias && !c.group_by_max);
  EXPECT_EQ(c.n_group, 8);
  EXPECT_EQ(c.topk_group, 4);
  EXPECT_EQ(c.routed_scaling_factor, 2.5);
  EXPECT_EQ(c.nextn_layers, 1);
  EXPECT_EQ(c.rope_scaling.type, "yarn");
  EXPECT_NEAR(yarn_softmax_factor(c), std::pow(0.1 * std::log(40.0) + 1, 2), 1e-12);
  EXPECT_EQ(rope_attention_factor(c), 1.0);  // mscale == mscale_all_dim
  const MoeConfig again = config_from_json(config_to_json(c), "again");  // written back as read
  EXPECT_EQ(again.kv_key_width(), 576);
  EXPECT_EQ(again.rope_scaling.factor, 40);
  EXPECT_EQ(again.dense_layers, c.dense_layers);
  nlohmann::json kimi = j;
  kimi["model_type"] = "kimi_k2";
  EXPECT_EQ(config_from_json(kimi, "k2").model_type, "deepseek_v3");
  // V2's defaults and rules: softmax greedy top-k, weights scaled only when not renormalised.
  nlohmann::json v2 = j;
  for (const char* k : {"scoring_func", "topk_method", "n_group", "topk_group", "norm_topk_prob"}) v2.erase(k);
  v2["model_type"] = "deepseek_v2";
  v2["q_lora_rank"] = nullptr;  // V2-Lite
  const MoeConfig c2 = config_from_json(v2, "v2");
  EXPECT_EQ(c2.scoring_func, "softmax");
  EXPECT_FALSE(c2.router_bias || c2.norm_topk_prob);
  EXPECT_EQ(c2.n_group, 1);
  EXPECT_EQ(c2.q_lora_rank, 0);
  EXPECT_EQ(c2.routed_scaling_factor, 2.5);
  v2["topk_method"] = "group_limited_greedy";
  v2["n_group"] = 8;
  v2["topk_group"] = 3;
  EXPECT_TRUE(config_from_json(v2, "v2").group_by_max);
  v2["topk_method"] = "random";
  EXPECT_NE(error_of(v2).find("topk_method"), std::string::npos) << error_of(v2);
  nlohmann::json bad = j;
  bad["attention_bias"] = true;
  EXPECT_NE(error_of(bad).find("attention_bias"), std::string::npos) << error_of(bad);
  bad = base("mixtral");  // yarn is DeepSeek's (its softmax scale) only
  bad["rope_scaling"] = {{"type", "yarn"}, {"factor", 4.0}};
  EXPECT_NE(error_of(bad).find("yarn"), std::string::npos) << error_of(bad);
}

// Kimi-K2-Instruct's config.json as released: DeepSeek-V3's code under model_type kimi_k2, read as
// the deepseek_v3 family and written back as kimi_k2 (its chat template and GGUF tokenizer follow).
TEST(Config, KimiK2AsReleased) {
  nlohmann::json j = nlohmann::json::parse(R"({
    "architectures": ["DeepseekV3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
    "auto_map": {"AutoConfig": "configuration_deepseek.DeepseekV3Config",
                 "AutoModel": "modeling_deepseek.DeepseekV3Model",
                 "AutoModelForCausalLM": "modeling_deepseek.DeepseekV3ForCausalLM"},
    "aux_loss_alpha": 0.001, "bos_token_id": 163584, "eos_token_id": 163585, "first_k_dense_replace": 1,
    "hidden_act": "silu", "hidden_size": 7168, "initializer_range": 0.02, "intermediate_size": 18432,
    "kv_lora_rank": 512, "max_position_embeddings": 131072, "model_type": "kimi_k2", "moe_intermediate_size": 2048,
    "moe_layer_freq": 1, "n_group": 1, "n_routed_experts": 384, "n_shared_experts": 1, "norm_topk_prob": true,
    "num_attention_heads": 64, "num_experts_per_tok": 8, "num_hidden_layers": 61, "num_key_value_heads": 64,
    "num_nextn_predict_layers": 0, "pretraining_tp": 1, "q_lora_rank": 1536, "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64, "rms_norm_eps": 1e-06,
    "rope_scaling": {"beta_fast": 1.0, "beta_slow": 1.0, "factor": 32.0, "mscale": 1.0, "mscale_all_dim": 1.0,
                     "original_max_position_embeddings": 4096, "type": "yarn"},
    "rope_theta": 50000.0, "routed_scaling_factor": 2.827, "scoring_func": "sigmoid", "seq_aux": true,
    "tie_word_embeddings": false, "topk_group": 1, "topk_method": "noaux_tc", "torch_dtype": "bfloat16",
    "transformers_version": "4.48.3", "use_cache": true, "v_head_dim": 128, "vocab_size": 163840})");
  const MoeConfig c = config_from_json(j, "k2");
  EXPECT_EQ(c.model_type, "deepseek_v3");
  EXPECT_EQ(c.model_alias, "kimi_k2");
  EXPECT_EQ(c.declared_model_type(), "kimi_k2");
  EXPECT_EQ(c.num_experts, 384);
  EXPECT_EQ(c.dense_layers, std::vector<int>({0}));
  EXPECT_EQ(c.n_group, 1);
  EXPECT_TRUE(c.router_bias);
  EXPECT_EQ(c.routed_scaling_factor, 2.827);
  EXPECT_EQ(c.rope_theta, 50000.0);
  EXPECT_EQ(c.rope_scaling.factor, 32.0);
  EXPECT_EQ(c.rope_scaling.beta_fast, 1.0);
  EXPECT_EQ(c.kv_key_width(), 576);
  const nlohmann::json back = config_to_json(c);
  EXPECT_EQ(back["model_type"], "kimi_k2");
  EXPECT_EQ(config_from_json(back, "again").model_alias, "kimi_k2");
  EXPECT_TRUE(config_from_json(deepseek_v3_released_bf16(), "v3").model_alias.empty());  // the family's own name
}

// Every DeepSeek-V3 and GLM-4.5 key that changes the math, given a value ferry does not implement
// (or none where it is required), is refused with one error naming it.
TEST(Config, DeepSeekV3AndGlm45ValuesAreRefusedByName) {
  struct Case {
    const char* family;    // the released config.json edited: deepseek_v3 or glm4_moe (GLM-4.5-Air)
    const char* key;
    nlohmann::json value;  // null: the key removed
    const char* named;     // what the error must say
  };
  const Case cases[] = {
      {"deepseek_v3", "kv_lora_rank", nullptr, "kv_lora_rank"},
      {"deepseek_v3", "kv_lora_rank", 0, "kv_lora_rank"},
      {"deepseek_v3", "q_lora_rank", -1, "q_lora_rank"},
      {"deepseek_v3", "qk_rope_head_dim", 63, "qk_rope_head_dim"},
      {"deepseek_v3", "qk_nope_head_dim", 0, "qk_nope_head_dim"},
      {"deepseek_v3", "v_head_dim", 0, "v_head_dim"},
      {"deepseek_v3", "n_routed_experts", nullptr, "n_routed_experts"},
      {"deepseek_v3", "n_shared_experts", -1, "n_shared_experts"},
      {"deepseek_v3", "scoring_func", "sqrtsoftplus", "scoring_func"},
      {"deepseek_v3", "topk_method", "random", "topk_method"},
      {"deepseek_v3", "n_group", 7, "n_group"},
      {"deepseek_v3", "topk_group", 9, "topk_group"},
      {"deepseek_v3", "first_k_dense_replace", -1, "first_k_dense_replace"},
      {"deepseek_v3", "moe_layer_freq", 0, "moe_layer_freq"},
      {"deepseek_v3", "num_nextn_predict_layers", -1, "num_nextn_predict_layers"},
      {"deepseek_v3", "attention_bias", true, "attention_bias"},
      {"deepseek_v3", "routed_scaling_factor", "2.5", "routed_scaling_factor"},
      {"deepseek_v3", "rope_scaling", {{"type", "yarn"}, {"factor", 40}, {"mscale_x", 1.0}}, "mscale_x"},
      {"deepseek_v3", "use_qk_norm", true, "key 'use_qk_norm' is not implemented for model_type 'deepseek_v3'"},
      {"glm4_moe", "n_routed_experts", nullptr, "n_routed_experts"},
      {"glm4_moe", "n_shared_experts", -1, "n_shared_experts"},
      {"glm4_moe", "partial_rotary_factor", 1.5, "partial_rotary_factor"},
      {"glm4_moe", "topk_group", 2, "topk_group"},
      {"glm4_moe", "first_k_dense_replace", -1, "first_k_dense_replace"},
      {"glm4_moe", "use_qk_norm", "yes", "use_qk_norm"},
      {"glm4_moe", "attention_bias", 1.5, "attention_bias"},
      {"glm4_moe", "num_nextn_predict_layers", -1, "num_nextn_predict_layers"},
      {"glm4_moe", "rope_scaling", {{"type", "yarn"}, {"factor", 4.0}}, "yarn"},
      {"glm4_moe", "scoring_func", "softmax", "key 'scoring_func' is not implemented for model_type 'glm4_moe'"},
      {"glm4_moe", "topk_method", "greedy", "key 'topk_method' is not implemented for model_type 'glm4_moe'"},
  };
  for (const Case& c : cases) {
    nlohmann::json j = std::string(c.family) == "deepseek_v3" ? deepseek_v3_released_bf16() : glm45_air_released();
    if (c.value.is_null()) j.erase(c.key);
    else j[c.key] = c.value;
    std::string e;
    try {
      config_from_json(j, "cfg");
    } catch (const Error& err) {  // FormatError for a key's value, InvalidArgument for a shape that does not hold
      e = err.what();
    }
    EXPECT_NE(e.find(c.named), std::string::npos) << c.family << " " << c.key << ": " << e;
  }
}

}  // namespace
}  // namespace ferry::moe
