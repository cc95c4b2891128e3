// fcnet: the communication-heavy model. Wide fully connected layers like the classifier head
// of VGG (where most of VGG's parameters, and so most of its gradient traffic, live):
// flatten → 2048 → 2048 → 2048 → classes with ReLU; ≈10.0 M parameters (≈40 MB of fp32
// gradients per step) for only ≈20 MFLOP per sample, so communication dominates.
#include "train/models/builtin_models.h"

namespace ferry::train::detail {

std::unique_ptr<Model> make_fcnet(const ModelOptions& options) {
  return make_relu_mlp("fcnet", options, {2048, 2048, 2048});
}

}  // namespace ferry::train::detail
