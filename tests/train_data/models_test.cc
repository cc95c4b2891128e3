#include "train/models/model.h"

#include <gtest/gtest.h>

#include <ATen/core/grad_mode.h>
#include <ATen/ops/cross_entropy_loss.h>
#include <ATen/ops/randn.h>

#include <cmath>
#include <thread>

#include "core/error.h"
#include "train/data/data_loader.h"
#include "train/data/synthetic_dataset.h"
#include "train/models/evaluate.h"

namespace ferry::train {
namespace {

TEST(Models, ParameterCounts) {
  EXPECT_EQ(make_model("cnn", 1)->parameter_count(), 421642);  // 320+18496+401536+1290
  const auto cnn = make_model("cnn", 1)->parameter_count();
  EXPECT_GE(cnn, 400000);
  EXPECT_LE(cnn, 440000);
  EXPECT_GE(make_model("fcnet", 1)->parameter_count(), 8000000);
  EXPECT_EQ(make_model("mlp", 1)->parameter_count(), 784 * 256 + 256 + 256 * 128 + 128 + 1290);
}

TEST(Models, ParametersComeFrontLayersFirst) {
  auto m = make_model("cnn", 1);
  const auto names = m->parameter_names();
  EXPECT_EQ(names, (std::vector<std::string>{"conv1.weight", "conv1.bias", "conv2.weight",
                                             "conv2.bias", "fc1.weight", "fc1.bias",
                                             "fc2.weight", "fc2.bias"}));
  EXPECT_EQ(m->parameters().size(), names.size());
}

TEST(Models, SameSeedSameWeightsEvenFromConcurrentThreads) {
  for (const auto& name : model_names()) {
    if (name == "fcnet") continue;  // large; the init path is the same as mlp's
    std::unique_ptr<Model> a, b;
    std::thread ta([&] { a = make_model(name, 42); });
    std::thread tb([&] { b = make_model(name, 42); });
    ta.join();
    tb.join();
    auto c = make_model(name, 43);
    const auto pa = a->parameters(), pb = b->parameters(), pc = c->parameters();
    ASSERT_EQ(pa.size(), pb.size());
    bool any_diff = false;
    for (std::size_t i = 0; i < pa.size(); ++i) {
      EXPECT_TRUE(pa[i].equal(pb[i])) << name << " parameter " << i;
      any_diff = any_diff || !pa[i].equal(pc[i]);
    }
    EXPECT_TRUE(any_diff) << name << ": seeds 42 and 43 gave identical weights";
  }
}

TEST(Models, ForwardShapes) {
  const at::Tensor x = at::randn({5, 1, 28, 28});
  for (const auto& name : model_names()) {
    if (model_input(name) != ModelInput::kImages) continue;  // gpt: zoo_models_test.cc
    auto m = make_model(name, 3);
    EXPECT_EQ(m->name(), name);
    EXPECT_EQ(m->forward(x).sizes(), (std::vector<std::int64_t>{5, 10})) << name;
  }
  ModelOptions cifar;
  cifar.in_channels = 3;
  cifar.height = cifar.width = 32;
  for (const char* name : {"cnn", "resnet20"})
    EXPECT_EQ(make_model(name, 1, cifar)->forward(at::randn({2, 3, 32, 32})).sizes(),
              (std::vector<std::int64_t>{2, 10})) << name;
}

TEST(Models, UnknownNameListsKnownOnes) {
  try {
    make_model("resnet", 1);  // a prefix of resnet20 is not a name
    ADD_FAILURE() << "no exception";
  } catch (const InvalidArgument& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("resnet"), std::string::npos) << m;
    for (const char* known : {"mlp", "cnn", "fcnet", "resnet20", "gpt"})
      EXPECT_NE(m.find(known), std::string::npos) << m;
  }
  ModelOptions odd;
  odd.height = 30;
  EXPECT_THROW(make_model("cnn", 1, odd), InvalidArgument);
}

TEST(Evaluate, AccuracyAndLossImproveWithSgd) {
  SyntheticOptions so;
  so.size = 512;
  so.noise = 2.0f;
  Dataset data = make_synthetic_dataset(so);
  auto model = make_model("mlp", 1);
  EvalOptions eo;
  eo.batch_size = 100;  // not a divisor of 512: the last batch is partial
  const EvalResult before = evaluate(*model, data, eo);
  EXPECT_EQ(before.count, 512);
  EXPECT_NEAR(before.mean_loss, std::log(10.0), 0.5);

  DataLoaderOptions lo;
  lo.batch_size = 32;
  DataLoader loader(data, lo);
  for (std::int64_t step = 0; step < loader.steps_per_epoch(); ++step) {
    Batch b = loader.batch(0, step);
    model->zero_grad();
    at::cross_entropy_loss(model->forward(b.images), b.labels).backward();
    at::NoGradGuard no_grad;
    for (auto& p : model->parameters()) p.sub_(p.grad(), 0.05);
  }
  const EvalResult after = evaluate(*model, data, eo);
  EXPECT_LT(after.mean_loss, before.mean_loss * 0.5);
  EXPECT_GT(after.accuracy, 0.9);
  EXPECT_LE(after.accuracy, 1.0);
  eo.limit = 10;
  EXPECT_EQ(evaluate(*model, data, eo).count, 10);
}

}  // namespace
}  // namespace ferry::train
