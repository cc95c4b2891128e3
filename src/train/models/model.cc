#include "train/models/model.h"

#include <torch/nn/module.h>

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

}  // namespace ferry::train
