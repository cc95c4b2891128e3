// fcnet: the communication-heavy model. Wide fully connected layers like the classifier head
// of VGG (where most of VGG's parameters, and so most of its gradient traffic, live):
// flatten → 2048 → 2048 → 2048 → classes with ReLU; ≈10.0 M parameters (≈40 MB of fp32
// gradients per step) for only ≈20 MFLOP per sample, so communication dominates.
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>

#include "train/models/builtin_models.h"

namespace ferry::train::detail {
namespace {

constexpr std::int64_t kWidth = 2048;

struct FcNet : torch::nn::Module {
  explicit FcNet(const ModelOptions& o)
      : fc1(register_module("fc1",
                            torch::nn::Linear(o.in_channels * o.height * o.width, kWidth))),
        fc2(register_module("fc2", torch::nn::Linear(kWidth, kWidth))),
        fc3(register_module("fc3", torch::nn::Linear(kWidth, kWidth))),
        fc4(register_module("fc4", torch::nn::Linear(kWidth, o.num_classes))) {}

  torch::nn::Linear fc1, fc2, fc3, fc4;
};

class FcNetModel final : public Model {
 public:
  explicit FcNetModel(std::shared_ptr<FcNet> net) : Model("fcnet", net), net_(std::move(net)) {}
  at::Tensor forward(const at::Tensor& x) override {
    FcNet& n = *net_;
    enter_layer(*n.fc1);
    at::Tensor h = n.fc1->forward(x.flatten(1)).relu();
    enter_layer(*n.fc2);
    h = n.fc2->forward(h).relu();
    enter_layer(*n.fc3);
    h = n.fc3->forward(h).relu();
    enter_layer(*n.fc4);
    return n.fc4->forward(h);
  }

 private:
  std::shared_ptr<FcNet> net_;
};

}  // namespace

std::unique_ptr<Model> make_fcnet(const ModelOptions& options) {
  return std::make_unique<FcNetModel>(std::make_shared<FcNet>(options));
}

}  // namespace ferry::train::detail
