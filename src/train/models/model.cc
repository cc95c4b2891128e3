#include "train/models/model.h"

#include <ATen/ops/cross_entropy_loss.h>
#include <torch/nn/module.h>

#include "core/error.h"

namespace ferry::train {

Model::Model(std::string name, std::shared_ptr<torch::nn::Module> module)
    : name_(std::move(name)), module_(std::move(module)) {}

Model::~Model() = default;

std::vector<at::Tensor> Model::parameters() const { return module_->parameters(); }

std::vector<std::string> Model::parameter_names() const {
  std::vector<std::string> names;
  for (const auto& item : module_->named_parameters()) names.push_back(item.key());
  return names;
}

std::int64_t Model::parameter_count() const {
  std::int64_t n = 0;
  for (const auto& p : module_->parameters()) n += p.numel();
  return n;
}

void Model::zero_grad() { module_->zero_grad(); }

void Model::set_layer_gate(LayerGate gate) {
  gate_ = std::move(gate);
  index_of_.clear();
  const auto params = parameters();
  for (std::size_t i = 0; i < params.size(); ++i) index_of_[params[i].unsafeGetTensorImpl()] = i;
}

void Model::enter_layer(const torch::nn::Module& layer) {
  if (!gate_) return;
  const auto params = layer.parameters();
  if (params.empty()) return;
  const auto first = index_of_.find(params.front().unsafeGetTensorImpl());
  FERRY_CHECK(first != index_of_.end(), "model ", name_, ": layer ", layer.name(), " is not a registered submodule");
  for (std::size_t k = 1; k < params.size(); ++k) {
    const auto it = index_of_.find(params[k].unsafeGetTensorImpl());
    FERRY_CHECK(it != index_of_.end() && it->second == first->second + k, "model ", name_, ": the parameters of ",
                layer.name(), " are not consecutive");
  }
  gate_(first->second, params.size());
}

at::Tensor cross_entropy_of(const at::Tensor& logits, const at::Tensor& labels, bool sum) {
  // reduction 1 = mean, 2 = sum (at::Reduction); ignore_index -100; no label smoothing.
  const std::int64_t reduction = sum ? 2 : 1;
  if (logits.dim() == 3) return at::cross_entropy_loss(logits.flatten(0, 1), labels.flatten(), {}, reduction, -100, 0.0);
  return at::cross_entropy_loss(logits, labels, {}, reduction, -100, 0.0);
}

std::int64_t predictions_in(const at::Tensor& labels) { return labels.numel(); }

}  // namespace ferry::train
