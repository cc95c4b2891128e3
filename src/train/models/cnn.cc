// cnn: conv3x3(32, pad 1) → ReLU → maxpool 2 → conv3x3(64, pad 1) → ReLU → maxpool 2 →
// fc 128 → ReLU → fc classes. At 28x28x1: 320 + 18,496 + 401,536 + 1,290 = 421,642
// parameters. bench/ddp/ddp_cnn.py builds the same network in PyTorch.
#include <ATen/ops/max_pool2d.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include "core/error.h"
#include "train/models/builtin_models.h"

namespace ferry::train::detail {
namespace {

struct CnnNet : torch::nn::Module {
  explicit CnnNet(const ModelOptions& o)
      : conv1(register_module(
            "conv1",
            torch::nn::Conv2d(torch::nn::Conv2dOptions(o.in_channels, 32, 3).padding(1)))),
        conv2(register_module("conv2",
                              torch::nn::Conv2d(torch::nn::Conv2dOptions(32, 64, 3).padding(1)))),
        fc1(register_module("fc1",
                            torch::nn::Linear(64 * (o.height / 4) * (o.width / 4), 128))),
        fc2(register_module("fc2", torch::nn::Linear(128, o.num_classes))) {}

  torch::nn::Conv2d conv1, conv2;
  torch::nn::Linear fc1, fc2;
};

class CnnModel final : public Model {
 public:
  explicit CnnModel(std::shared_ptr<CnnNet> net) : Model("cnn", net), net_(std::move(net)) {}
  at::Tensor forward(const at::Tensor& x) override {
    CnnNet& n = *net_;
    enter_layer(*n.conv1);
    at::Tensor h = at::max_pool2d(n.conv1->forward(x).relu(), {2, 2});
    enter_layer(*n.conv2);
    h = at::max_pool2d(n.conv2->forward(h).relu(), {2, 2});
    enter_layer(*n.fc1);
    h = n.fc1->forward(h.flatten(1)).relu();
    enter_layer(*n.fc2);
    return n.fc2->forward(h);
  }

 private:
  std::shared_ptr<CnnNet> net_;
};

}  // namespace

std::unique_ptr<Model> make_cnn(const ModelOptions& options) {
  FERRY_REQUIRE(options.height >= 4 && options.width >= 4 && options.height % 4 == 0 &&
                    options.width % 4 == 0,
                "model cnn: image height and width must be multiples of 4, got ",
                options.height, "x", options.width);
  return std::make_unique<CnnModel>(std::make_shared<CnnNet>(options));
}

}  // namespace ferry::train::detail
