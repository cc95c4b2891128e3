// mlp: a small fully connected baseline, flatten → 256 → 128 → classes with ReLU.
#include "train/models/builtin_models.h"

namespace ferry::train::detail {

std::unique_ptr<Model> make_mlp(const ModelOptions& options) { return make_relu_mlp("mlp", options, {256, 128}); }

}  // namespace ferry::train::detail
