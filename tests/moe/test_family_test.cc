// The recipe of moe/model/family.h ("a new model family is one file plus one registration line"),
// followed by a test-only family: once registered, make-tiny writes a checkpoint of it under its
// own config key and tensor names, config.json of it is read (and its unknown keys refused by its
// name), and the model computes what the same weights compute as Mixtral.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "moe/model/checkpoint.h"
#include "moe/model/config_json.h"
#include "moe/model/family.h"
#include "moe/model/reference_model.h"
#include "moe/model/tiny_model.h"
#include "moe_test_util.h"

namespace ferry::moe {
namespace {

// The family's "one file": Mixtral's math under other names. Its experts are counted by its own key
// and live under "moe." as fc_in/fc_gate/fc_out.
ModelFamily toy_family() {
  ModelFamily f;
  f.name = "test_toy_moe";
  f.summary = "a test-only family";
  f.hf_architecture = "ToyMoeForCausalLM";
  f.defaults.norm_topk_prob = true;
  f.config_keys = {"toy_experts", "head_dim"};
  f.tensors = {.moe_module = "moe.", .gate = "fc_gate", .up = "fc_in", .down = "fc_out", .shared_expert = ""};
  f.read = [](const nlohmann::json& j, MoeConfig& c, const std::string& origin) {
    c.intermediate_size = config_require_int(j, "intermediate_size", origin);
    c.num_experts = config_require_int(j, "toy_experts", origin);
  };
  f.write = [](const MoeConfig& c, nlohmann::json& j) { j["toy_experts"] = c.num_experts; };
  return f;
}

void register_toy_family() {
  static const bool once = (register_model_family(toy_family()), true);  // the one registration line
  (void)once;
}

TEST(TestFamily, ARegisteredFamilyIsMadeReadAndComputes) {
  register_toy_family();
  const std::vector<std::string> names = model_family_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "test_toy_moe"), names.end());

  // make-tiny accepts it and writes its keys and tensor names.
  testing::TempDir dir;
  TinyModelOptions o;
  o.config = testing::tiny_config();
  o.config.model_type = "test_toy_moe";
  o.config.norm_topk_prob = false;
  prepare_tiny_config(o.config);
  EXPECT_TRUE(o.config.norm_topk_prob);  // the family's default
  make_tiny_model(dir / "toy", o);
  nlohmann::json j;
  std::ifstream(dir / "toy/config.json") >> j;
  EXPECT_EQ(j.at("model_type"), "test_toy_moe");
  EXPECT_EQ(j.at("toy_experts"), o.config.num_experts);
  EXPECT_EQ(j.at("architectures"), nlohmann::json::array({"ToyMoeForCausalLM"}));
  const auto toy = Checkpoint::open(dir / "toy");
  EXPECT_EQ(toy->config().model_type, "test_toy_moe");
  EXPECT_EQ(toy->config().num_experts, o.config.num_experts);
  EXPECT_TRUE(toy->contains("model.layers.1.moe.experts.3.fc_in.weight"));
  EXPECT_TRUE(toy->contains("model.layers.0.moe.gate.weight"));
  EXPECT_EQ(TensorNames(toy->config()).expert(1, 3, 2), "model.layers.1.moe.experts.3.fc_out.weight");

  // Keys are checked against the family's own list, and its read() requires its own key.
  nlohmann::json bad = j;
  bad["num_local_experts"] = 8;
  try {
    config_from_json(bad, "toy");
    ADD_FAILURE() << "a Mixtral key accepted for the toy family";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("key 'num_local_experts' is not implemented for model_type 'test_toy_moe'"),
              std::string::npos)
        << e.what();
  }
  bad = j;
  bad.erase("toy_experts");
  EXPECT_THROW(config_from_json(bad, "toy"), FormatError);

  // The same weights as a Mixtral checkpoint compute the same logits: the family's names are the
  // only difference, and the forward pass found every tensor under them.
  MoeConfig mixtral = toy->config();
  mixtral.model_type = "mixtral";
  write_checkpoint(dir / "mixtral", mixtral, random_tensors(mixtral, o.seed), {});
  const TokenBatch tokens = {{1, 7, 42, 9, 200}, {3, 3, 5, 81, 17}};
  const std::vector<float> a = ReferenceModel::load(*toy)->forward(tokens, true);
  const std::vector<float> b = ReferenceModel::load(*Checkpoint::open(dir / "mixtral"))->forward(tokens, true);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(a, b);
}

TEST(TestFamily, UnknownAndTakenNamesAreRefused) {
  register_toy_family();
  EXPECT_EQ(find_family("no_such_family"), nullptr);
  EXPECT_THROW(family_of("no_such_family"), InvalidArgument);
  EXPECT_EQ(find_family("ferry_tiny")->name, "mixtral");  // an alias reads as its family
  EXPECT_THROW(register_model_family(toy_family()), InvalidArgument);
  ModelFamily alias_taken = toy_family();
  alias_taken.name = "test_other";
  alias_taken.aliases = {{"ferry_tiny"}};
  EXPECT_THROW(register_model_family(alias_taken), InvalidArgument);
  ModelFamily unknown_template = toy_family();
  unknown_template.name = "test_unknown_template";
  unknown_template.chat_template = "no_such_template";  // a family names a registered chat template
  EXPECT_THROW(register_model_family(unknown_template), InvalidArgument);
  unknown_template.aliases = {{"test_alias", "no_such_template"}};  // so does an alias with its own
  unknown_template.chat_template = "none";
  EXPECT_THROW(register_model_family(unknown_template), InvalidArgument);
  EXPECT_EQ(find_family("test_alias"), nullptr);
  MoeConfig c = testing::tiny_config();
  c.model_type = "ferry_tiny";  // make-tiny writes families, not aliases
  EXPECT_THROW(prepare_tiny_config(c), InvalidArgument);
}

}  // namespace
}  // namespace ferry::moe
