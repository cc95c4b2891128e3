// mlp: a small fully connected baseline, flatten → 256 → 128 → classes with ReLU.
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>

#include "train/models/builtin_models.h"

namespace ferry::train::detail {
namespace {

struct MlpNet : torch::nn::Module {
  explicit MlpNet(const ModelOptions& o)
      : fc1(register_module("fc1", torch::nn::Linear(o.in_channels * o.height * o.width, 256))),
        fc2(register_module("fc2", torch::nn::Linear(256, 128))),
        fc3(register_module("fc3", torch::nn::Linear(128, o.num_classes))) {}

  torch::nn::Linear fc1, fc2, fc3;
};

class MlpModel final : public Model {
 public:
  explicit MlpModel(std::shared_ptr<MlpNet> net) : Model("mlp", net), net_(std::move(net)) {}
  at::Tensor forward(const at::Tensor& x) override {
    MlpNet& n = *net_;
    enter_layer(*n.fc1);
    at::Tensor h = n.fc1->forward(x.flatten(1)).relu();
    enter_layer(*n.fc2);
    h = n.fc2->forward(h).relu();
    enter_layer(*n.fc3);
    return n.fc3->forward(h);
  }

 private:
  std::shared_ptr<MlpNet> net_;
};

}  // namespace

std::unique_ptr<Model> make_mlp(const ModelOptions& options) {
  return std::make_unique<MlpModel>(std::make_shared<MlpNet>(options));
}

}  // namespace ferry::train::detail
