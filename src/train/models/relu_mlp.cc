// A fully connected ReLU network: flatten → hidden[0] → … → hidden[n-1] → classes, ReLU after
// every layer but the last. The layers are registered as fc1 … fc(n+1), front to back, so
// parameter names, order and initialisation follow the layer list. mlp and fcnet are two
// widths of it (mlp.cc, fcnet.cc).
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>

#include "train/models/builtin_models.h"

namespace ferry::train::detail {
namespace {

struct ReluMlpNet : torch::nn::Module {
  ReluMlpNet(const ModelOptions& o, const std::vector<std::int64_t>& hidden) {
    std::int64_t in = o.in_channels * o.height * o.width;
    std::vector<std::int64_t> outs = hidden;
    outs.push_back(o.num_classes);
    for (std::size_t i = 0; i < outs.size(); ++i) {
      layers.push_back(register_module("fc" + std::to_string(i + 1), torch::nn::Linear(in, outs[i])));
      in = outs[i];
    }
  }

  std::vector<torch::nn::Linear> layers;
};

class ReluMlpModel final : public Model {
 public:
  ReluMlpModel(std::string name, std::shared_ptr<ReluMlpNet> net) : Model(std::move(name), net), net_(std::move(net)) {}
  at::Tensor forward(const at::Tensor& x) override {
    at::Tensor h = x.flatten(1);
    auto& layers = net_->layers;
    for (std::size_t i = 0; i < layers.size(); ++i) {
      enter_layer(*layers[i]);
      h = layers[i]->forward(h);
      if (i + 1 < layers.size()) h = h.relu();
    }
    return h;
  }

 private:
  std::shared_ptr<ReluMlpNet> net_;
};

}  // namespace

std::unique_ptr<Model> make_relu_mlp(std::string name, const ModelOptions& options,
                                     const std::vector<std::int64_t>& hidden) {
  return std::make_unique<ReluMlpModel>(std::move(name), std::make_shared<ReluMlpNet>(options, hidden));
}

}  // namespace ferry::train::detail
