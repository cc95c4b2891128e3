// One contiguous buffer for all of a model's weights and one for its gradients (Horovod's fusion
// buffer, PyTorch DDP's buckets): every parameter becomes a view into the flat weights, every
// gradient a view into the flat gradients. Communication then sees the model as one float
// vector, and a pulled weight lands directly in the model.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <span>
#include <vector>

namespace ferry::train {

class FlatParams {
 public:
  // Rebinds `params` (keeping their values) into the flat buffers. The tensors are shared with
  // the model, which must outlive this object.
  explicit FlatParams(std::vector<at::Tensor> params);

  std::span<float> weights() { return {weights_ptr_, total_}; }
  std::span<float> grads() { return {grads_ptr_, total_}; }
  std::size_t size() const { return total_; }
  // Element count of each parameter, in model order.
  const std::vector<std::size_t>& numels() const { return numels_; }
  // Offset of parameter i in the flat vector.
  std::size_t offset(std::size_t i) const { return offsets_[i]; }
  std::size_t num_params() const { return params_.size(); }
  const at::Tensor& param(std::size_t i) const { return params_[i]; }

  // Makes sure the flat gradient holds every parameter's gradient (copies any gradient autograd
  // put in a fresh tensor instead of accumulating into the view).
  void gather_grads();
  // Zeroes the gradients in place (keeping the views).
  void zero_grads();

 private:
  std::vector<at::Tensor> params_;
  std::vector<std::size_t> numels_;
  std::vector<std::size_t> offsets_;
  at::Tensor flat_weights_;
  at::Tensor flat_grads_;
  float* weights_ptr_ = nullptr;
  float* grads_ptr_ = nullptr;
  std::size_t total_ = 0;
};

}  // namespace ferry::train
