// resnet20 and gpt against independent references: parameter counts from the papers' layer
// shapes, resnet20's forward recomputed from its named parameters with functional ops, gpt's
// causality and its loss on a batch it was trained on.
#include <gtest/gtest.h>

#include <ATen/core/grad_mode.h>
#include <ATen/ops/batch_norm.h>
#include <ATen/ops/constant_pad_nd.h>
#include <ATen/ops/conv2d.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/randint.h>
#include <ATen/ops/randn.h>
#include <torch/nn/module.h>
#include <torch/optim/adam.h>

#include <cmath>
#include <map>

#include "core/error.h"
#include "train/models/evaluate.h"
#include "train/models/model.h"

namespace ferry::train {
namespace {

std::map<std::string, at::Tensor> named(const Model& m) {
  std::map<std::string, at::Tensor> out;
  const auto names = m.parameter_names();
  const auto params = m.parameters();
  for (std::size_t i = 0; i < names.size(); ++i) out[names[i]] = params[i];
  return out;
}

TEST(Resnet20, ParameterCountIsThePapersLayerShapes) {
  // conv 3x3 c_in -> 16, BN 16; stage s (16, 32, 64 channels): 3 blocks of two 3x3 convs and two
  // BNs; the first conv of stages 2 and 3 takes the previous width; fc 64 -> 10.
  auto count = [](std::int64_t c_in) {
    std::int64_t n = 9 * c_in * 16 + 2 * 16;
    std::int64_t in = 16;
    for (const std::int64_t c : {16, 32, 64})
      for (int b = 0; b < 3; ++b, in = c) n += 9 * in * c + 9 * c * c + 4 * c;
    return n + 64 * 10 + 10;
  };
  EXPECT_EQ(make_model("resnet20", 1)->parameter_count(), count(1));
  ModelOptions cifar;
  cifar.in_channels = 3;
  cifar.height = cifar.width = 32;
  const auto m = make_model("resnet20", 1, cifar);
  EXPECT_EQ(m->parameter_count(), count(3));
  EXPECT_EQ(count(3), 269722);  // the "0.27M" of He et al.'s table 6
  EXPECT_EQ(m->parameters().size(), 1u + 2u + 9u * 6u + 2u);  // conv, BN, 9 blocks, fc
}

// The same network written out with functional ops from the parameters' names; batch norm with the
// batch's statistics (training mode), option-A shortcuts.
at::Tensor reference_resnet20(const std::map<std::string, at::Tensor>& p, at::Tensor x) {
  auto bn = [&](const at::Tensor& h, const std::string& name) {
    return at::batch_norm(h, p.at(name + ".weight"), p.at(name + ".bias"), {}, {}, /*training=*/true, 0.1, 1e-5,
                          false);
  };
  x = at::constant_pad_nd(x, {2, 2, 2, 2}, 0.0);  // 28x28 → 32x32, centred
  at::Tensor h = bn(at::conv2d(x, p.at("conv.weight"), {}, 1, 1), "bn").relu();
  int index = 0;
  std::int64_t in = 16;
  for (const std::int64_t c : {16, 32, 64}) {
    for (int b = 0; b < 3; ++b, ++index) {
      const std::string k = "blocks." + std::to_string(index) + ".";
      const std::int64_t stride = b == 0 && c != 16 ? 2 : 1;
      at::Tensor y = bn(at::conv2d(h, p.at(k + "conv1.weight"), {}, stride, 1), k + "bn1").relu();
      y = bn(at::conv2d(y, p.at(k + "conv2.weight"), {}, 1, 1), k + "bn2");
      at::Tensor s = h.slice(2, 0, {}, stride).slice(3, 0, {}, stride);
      if (c != in) s = at::cat({s, at::zeros({s.size(0), c - in, s.size(2), s.size(3)})}, 1);
      h = (y + s).relu();
      in = c;
    }
  }
  return at::linear(h.mean({2, 3}), p.at("fc.weight"), p.at("fc.bias"));
}

TEST(Resnet20, ForwardEqualsAFunctionalReference) {
  auto m = make_model("resnet20", 7);
  const at::Tensor x = at::randn({4, 1, 28, 28});
  at::NoGradGuard no_grad;
  const at::Tensor got = m->forward(x);
  const at::Tensor want = reference_resnet20(named(*m), x);
  // Same operations in the same order except the mean (avg_pool2d vs mean): float32 rounding of
  // 64-term sums of logits of size ~1, far below 1e-4.
  EXPECT_LT((got - want).abs().max().item<double>(), 1e-4);
}

TEST(Resnet20, EvaluationUsesRunningStatisticsAndRestoresTrainingMode) {
  auto m = make_model("resnet20", 7);
  Dataset d;
  d.name = "random";
  d.images = at::randn({6, 1, 28, 28});
  d.labels = at::randint(0, 10, {6}, at::kLong);
  const EvalResult a = evaluate(*m, d), b = evaluate(*m, d);
  EXPECT_TRUE(m->module().is_training());
  // Running statistics are not updated by evaluation, and batch statistics are not used: the result
  // does not depend on which items share the batch.
  EXPECT_EQ(a.mean_loss, b.mean_loss);
  EvalOptions one;
  one.batch_size = 1;
  EXPECT_NEAR(evaluate(*m, d, one).mean_loss, a.mean_loss, 1e-4);
}

TEST(Gpt, ParameterCountIsGpt2LayoutAtWidth384) {
  const std::int64_t d = 384, v = 256, t = 128, blocks = 6;
  const std::int64_t block = 2 * d + (3 * d * d + 3 * d) + (d * d + d) + 2 * d + (4 * d * d + 4 * d) + (4 * d * d + d);
  const auto m = make_model("gpt", 1);
  EXPECT_EQ(m->parameter_count(), v * d + t * d + blocks * block + 2 * d + (d * v + v));
  EXPECT_EQ(m->parameter_count(), 10893568);
  EXPECT_EQ(model_input("gpt"), ModelInput::kTokens);
  EXPECT_EQ(model_input("resnet20"), ModelInput::kImages);
}

TEST(Gpt, PositionsSeeOnlyThePast) {
  auto m = make_model("gpt", 3);
  at::NoGradGuard no_grad;
  const at::Tensor x = at::randint(0, 256, {2, 16}, at::kLong);
  at::Tensor y = x.clone();
  y.select(1, 9).fill_(0);
  y.select(1, 9).add_(x.select(1, 9).add(1).remainder(256));  // another token at position 9
  const at::Tensor a = m->forward(x), b = m->forward(y);
  EXPECT_EQ(a.sizes(), (std::vector<std::int64_t>{2, 16, 256}));
  EXPECT_TRUE(a.narrow(1, 0, 9).equal(b.narrow(1, 0, 9)));  // positions 0..8 cannot see position 9
  EXPECT_GT((a.narrow(1, 9, 7) - b.narrow(1, 9, 7)).abs().max().item<double>(), 0.0);
  // A prefix of the input gives the same logits for the prefix (no future in any position).
  EXPECT_LT((m->forward(x.narrow(1, 0, 5)) - a.narrow(1, 0, 5)).abs().max().item<double>(), 1e-4);
  EXPECT_THROW(m->forward(at::randint(0, 256, {1, 129}, at::kLong)), InvalidArgument);
}

TEST(Gpt, LossStartsNearUniformAndFallsOnARepeatedBatch) {
  auto m = make_model("gpt", 5);
  const at::Tensor x = at::randint(0, 256, {2, 32}, at::kLong);
  const at::Tensor y = x.roll(-1, 1);
  // Logits at initialisation are N(0, s^2) with s ~ 0.02 sqrt(384) = 0.39: the cross-entropy is
  // ln 256 + s^2/2 ~ 5.62 in expectation; 0.5 is several of its standard deviations over 64 tokens.
  const double first = cross_entropy_of(m->forward(x), y).item<double>();
  EXPECT_NEAR(first, std::log(256.0), 0.5);
  torch::optim::Adam opt(m->module().parameters(), torch::optim::AdamOptions(1e-3));
  double last = first;
  for (int step = 0; step < 30; ++step) {
    opt.zero_grad();
    at::Tensor loss = cross_entropy_of(m->forward(x), y);
    loss.backward();
    opt.step();
    last = loss.item<double>();
  }
  EXPECT_LT(last, 0.5 * first);  // 64 tokens memorised: the loss halves well within 30 Adam steps
}

TEST(CrossEntropyOf, SequenceLossIsTheMeanOverPositions) {
  const at::Tensor logits = at::randn({3, 5, 7});
  const at::Tensor labels = at::randint(0, 7, {3, 5}, at::kLong);
  double sum = 0;
  for (int b = 0; b < 3; ++b)
    for (int t = 0; t < 5; ++t) {
      const at::Tensor row = logits[b][t];
      sum += (row.exp().sum().log() - row[labels[b][t].item<std::int64_t>()]).item<double>();
    }
  EXPECT_NEAR(cross_entropy_of(logits, labels).item<double>(), sum / 15, 1e-5);
  EXPECT_NEAR(cross_entropy_of(logits, labels, true).item<double>(), sum, 1e-4);
  EXPECT_EQ(predictions_in(labels), 15);
}

}  // namespace
}  // namespace ferry::train
