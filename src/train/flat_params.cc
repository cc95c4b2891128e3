#include "train/flat_params.h"

#include <torch/types.h>

#include "core/error.h"

namespace ferry::train {

FlatParams::FlatParams(std::vector<at::Tensor> params) : params_(std::move(params)) {
  for (const auto& p : params_) {
    FERRY_CHECK(p.scalar_type() == at::kFloat, "only float32 parameters are supported");
    offsets_.push_back(total_);
    numels_.push_back(static_cast<std::size_t>(p.numel()));
    total_ += p.numel();
  }
  flat_weights_ = torch::empty({static_cast<std::int64_t>(total_)}, torch::kFloat);
  flat_grads_ = torch::zeros({static_cast<std::int64_t>(total_)}, torch::kFloat);
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    auto& p = params_[i];
    auto n = static_cast<std::int64_t>(numels_[i]);
    auto off = static_cast<std::int64_t>(offsets_[i]);
    auto w = flat_weights_.narrow(0, off, n).view(p.sizes());
    w.copy_(p.detach());
    p.set_data(w);
    p.mutable_grad() = flat_grads_.narrow(0, off, n).view(p.sizes());
  }
  weights_ptr_ = flat_weights_.data_ptr<float>();
  grads_ptr_ = flat_grads_.data_ptr<float>();
}

void FlatParams::gather_grads() {
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    auto& p = params_[i];
    // A parameter re-pointed elsewhere (p.data = ..., .to(), load_state_dict(assign=True)) would
    // train a copy that no update reaches: refused, not silently wrong.
    FERRY_REQUIRE(p.data_ptr() == static_cast<void*>(weights_ptr_ + offsets_[i]), "parameter ", i, " (",
                  p.sizes(), ") no longer lives in the optimizer's flat buffer: it was replaced (p.data = ..., "
                  ".to(), or a load with assign); copy new values in place instead (p.copy_(...))");
    float* expected = grads_ptr_ + offsets_[i];
    const auto& g = p.grad();
    if (!g.defined()) {
      std::fill(expected, expected + numels_[i], 0.0f);
    } else if (g.data_ptr<float>() != expected) {
      auto view = flat_grads_.narrow(0, static_cast<std::int64_t>(offsets_[i]), static_cast<std::int64_t>(numels_[i]));
      view.copy_(g.reshape({-1}));
      p.mutable_grad() = view.view(p.sizes());
    }
  }
}

void FlatParams::zero_grads() { flat_grads_.zero_(); }

}  // namespace ferry::train
