// A trainable classifier: a libtorch module plus its forward pass, made by name.
// This header does not include <torch/torch.h>; include it where you need torch::nn::Module's
// full definition (optimizers, serialisation).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace torch::nn {
class Module;
}  // namespace torch::nn

namespace ferry::train {

// Shape of the inputs and outputs a model is built for.
struct ModelOptions {
  std::int64_t in_channels = 1;   // image channels (1: MNIST-format, 3: CIFAR-10)
  std::int64_t height = 28;       // image height; cnn needs a multiple of 4
  std::int64_t width = 28;        // image width; cnn needs a multiple of 4
  std::int64_t num_classes = 10;  // number of output logits
  std::int64_t vocab = 256;       // token models: vocabulary size (256: bytes)
  std::int64_t context = 128;     // token models: longest input sequence
};

// What a model reads, and so which data it trains on and how its quality is stated.
enum class ModelInput {
  kImages,  // float [B, C, H, W] → logits [B, classes]; quality: test accuracy
  kTokens,  // token ids int64 [B, T] → next-token logits [B, T, vocab]; quality: perplexity
};

class Model {
 public:
  // `module` is the libtorch module holding every parameter, shared with the subclass.
  Model(std::string name, std::shared_ptr<torch::nn::Module> module);
  virtual ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  // Logits [B, num_classes] of a float batch [B, C, H, W] (image models), or [B, T, vocab] of
  // token ids [B, T] (token models).
  virtual at::Tensor forward(const at::Tensor& x) = 0;

  // The name it was made with ("cnn").
  const std::string& name() const { return name_; }
  // The trainable tensors in registration order: front (input-side) layers first.
  std::vector<at::Tensor> parameters() const;
  // Their dotted names ("conv1.weight"), in the same order.
  std::vector<std::string> parameter_names() const;
  // Total number of trainable scalars.
  std::int64_t parameter_count() const;
  // Clears every parameter's gradient.
  void zero_grad();
  // The underlying module (for torch::optim, serialisation, train()/eval()).
  torch::nn::Module& module() { return *module_; }

  // Called by forward() before each layer with the range [first, first + count) of
  // parameters() that the layer reads, so that a strategy can finish that layer's update just
  // before it runs (wfbp overlaps the next forward with the back layers' communication).
  using LayerGate = std::function<void(std::size_t first, std::size_t count)>;
  // Installs `gate` (empty: none, the default).
  void set_layer_gate(LayerGate gate);

 protected:
  // Subclasses call it in forward() before running `layer`, one of their registered
  // submodules whose parameters are consecutive in parameters().
  void enter_layer(const torch::nn::Module& layer);

 private:
  std::string name_;
  std::shared_ptr<torch::nn::Module> module_;
  LayerGate gate_;
  std::unordered_map<const void*, std::size_t> index_of_;  // TensorImpl* -> index in parameters()
};

// Names make_model accepts: "mlp", "cnn", "fcnet", "resnet20", "gpt".
std::vector<std::string> model_names();
// What model `name` reads; throws InvalidArgument for an unknown name (listing the known ones).
ModelInput model_input(const std::string& name);

// Mean cross-entropy of `logits` against `labels`: [B, classes] against [B], or [B, T, vocab]
// against [B, T] (every position counts once). `sum`: the sum instead of the mean.
at::Tensor cross_entropy_of(const at::Tensor& logits, const at::Tensor& labels, bool sum = false);
// Predictions counted: B for image models, B x T for token models.
std::int64_t predictions_in(const at::Tensor& labels);

// Builds model `name` with weights initialised deterministically from `seed` (the same seed
// gives bitwise-identical weights in every process). Seeds libtorch's global generator
// (torch::manual_seed) under a lock, so concurrent calls from several threads stay
// deterministic. Throws InvalidArgument for an unknown name (listing the known ones) or an
// input shape the model cannot take.
std::unique_ptr<Model> make_model(const std::string& name, std::uint64_t seed,
                                  const ModelOptions& options = {});

}  // namespace ferry::train
