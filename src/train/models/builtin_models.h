// Constructors of the built-in models, used by make_model (model_factory.cc) only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "train/models/model.h"

namespace ferry::train::detail {

// flatten → hidden… → classes fully connected, ReLU between layers (relu_mlp.cc).
std::unique_ptr<Model> make_relu_mlp(std::string name, const ModelOptions& options,
                                     const std::vector<std::int64_t>& hidden);
// 784 → 256 → 128 → 10 fully connected, ReLU (≈0.24 M parameters at 28x28x1).
std::unique_ptr<Model> make_mlp(const ModelOptions& options);
// conv3x3(32) → pool → conv3x3(64) → pool → fc 128 → fc 10 (≈0.42 M parameters at 28x28x1).
std::unique_ptr<Model> make_cnn(const ModelOptions& options);
// 784 → 2048 → 2048 → 2048 → 10 fully connected, ReLU (≈10.0 M parameters at 28x28x1).
std::unique_ptr<Model> make_fcnet(const ModelOptions& options);
// He et al.'s CIFAR ResNet-20, option-A shortcuts, BN (≈0.27 M parameters; resnet20.cc).
std::unique_ptr<Model> make_resnet20(const ModelOptions& options);
// GPT-2-style decoder-only transformer, 6 blocks of width 384 (≈10.9 M parameters; gpt.cc).
std::unique_ptr<Model> make_gpt(const ModelOptions& options);

}  // namespace ferry::train::detail
