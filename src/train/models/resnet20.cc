// resnet20: He et al.'s CIFAR ResNet with n = 3 ("Deep Residual Learning for Image Recognition",
// CVPR 2016, section 4.2): conv3x3(16) → BN → ReLU, three stages of three basic blocks (16, 32, 64
// channels, the first block of stages 2 and 3 with stride 2), global average pooling, fc classes.
// Identity shortcuts throughout, option A: where the shape changes, the shortcut subsamples by 2
// and pads the new channels with zeros, so shortcuts have no parameters. Kaiming-normal conv
// weights (fan_out), BN weight 1 and bias 0, as torchvision's ResNets. 269,722 parameters at 3
// input channels and 10 classes (the paper's "0.27M"), 269,434 at 1 channel; 59 parameter
// tensors: many small tensors, where fusion and priority matter. BN keeps per-worker running
// statistics (as DDP without SyncBatchNorm); evaluation uses rank 0's.
//
// Images smaller than 32x32 (Fashion-MNIST's 28x28) are zero-padded to 32x32, centred, in the
// forward pass: the paper's network sees the paper's input size.
#include <ATen/ops/avg_pool2d.h>
#include <ATen/ops/constant_pad_nd.h>
#include <torch/nn/init.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include "core/error.h"
#include "train/models/builtin_models.h"

namespace ferry::train::detail {
namespace {

constexpr std::int64_t kSide = 32;  // the paper's input size

torch::nn::Conv2d conv3x3(std::int64_t in, std::int64_t out, std::int64_t stride) {
  torch::nn::Conv2d c(torch::nn::Conv2dOptions(in, out, 3).stride(stride).padding(1).bias(false));
  torch::nn::init::kaiming_normal_(c->weight, 0.0, torch::kFanOut, torch::kReLU);
  return c;
}

// conv → BN → ReLU → conv → BN, plus the shortcut, → ReLU.
struct BasicBlock : torch::nn::Module {
  BasicBlock(std::int64_t in, std::int64_t out, std::int64_t stride)
      : conv1(register_module("conv1", conv3x3(in, out, stride))),
        bn1(register_module("bn1", torch::nn::BatchNorm2d(out))),
        conv2(register_module("conv2", conv3x3(out, out, 1))),
        bn2(register_module("bn2", torch::nn::BatchNorm2d(out))),
        stride_(stride),
        pad_channels_(out - in) {}

  at::Tensor forward(const at::Tensor& x) {
    at::Tensor h = bn1->forward(conv1->forward(x)).relu();
    h = bn2->forward(conv2->forward(h));
    at::Tensor shortcut = x;
    if (stride_ != 1) shortcut = shortcut.slice(2, 0, {}, stride_).slice(3, 0, {}, stride_);
    // Option A: the added channels of the shortcut are zeros (padding dim 1, the channels).
    if (pad_channels_ > 0) shortcut = at::constant_pad_nd(shortcut, {0, 0, 0, 0, 0, pad_channels_}, 0.0);
    return (h + shortcut).relu();
  }

  torch::nn::Conv2d conv1;
  torch::nn::BatchNorm2d bn1;
  torch::nn::Conv2d conv2;
  torch::nn::BatchNorm2d bn2;
  std::int64_t stride_;
  std::int64_t pad_channels_;
};

struct Resnet20Net : torch::nn::Module {
  explicit Resnet20Net(const ModelOptions& o)
      : conv(register_module("conv", conv3x3(o.in_channels, 16, 1))),
        bn(register_module("bn", torch::nn::BatchNorm2d(16))),
        blocks(register_module("blocks", torch::nn::ModuleList())) {
    std::int64_t in = 16;
    for (const std::int64_t out : {16, 32, 64}) {
      for (int b = 0; b < 3; ++b) {
        auto block = std::make_shared<BasicBlock>(in, out, b == 0 && out != 16 ? 2 : 1);
        blocks->push_back(block);
        block_list.push_back(block);
        in = out;
      }
    }
    fc = register_module("fc", torch::nn::Linear(64, o.num_classes));
  }

  torch::nn::Conv2d conv;
  torch::nn::BatchNorm2d bn;
  torch::nn::ModuleList blocks;
  std::vector<std::shared_ptr<BasicBlock>> block_list;
  torch::nn::Linear fc{nullptr};
};

class Resnet20Model final : public Model {
 public:
  Resnet20Model(std::shared_ptr<Resnet20Net> net, const ModelOptions& o)
      : Model("resnet20", net), net_(std::move(net)), pad_h_(kSide - o.height), pad_w_(kSide - o.width) {}

  at::Tensor forward(const at::Tensor& x) override {
    Resnet20Net& n = *net_;
    at::Tensor h = x;
    if (pad_h_ > 0 || pad_w_ > 0)
      h = at::constant_pad_nd(h, {pad_w_ / 2, pad_w_ - pad_w_ / 2, pad_h_ / 2, pad_h_ - pad_h_ / 2}, 0.0);
    enter_layer(*n.conv);
    h = n.conv->forward(h);
    enter_layer(*n.bn);
    h = n.bn->forward(h).relu();
    for (const auto& block : n.block_list) {
      enter_layer(*block);
      h = block->forward(h);
    }
    h = at::avg_pool2d(h, {h.size(2), h.size(3)}).flatten(1);
    enter_layer(*n.fc);
    return n.fc->forward(h);
  }

 private:
  std::shared_ptr<Resnet20Net> net_;
  std::int64_t pad_h_;
  std::int64_t pad_w_;
};

}  // namespace

std::unique_ptr<Model> make_resnet20(const ModelOptions& options) {
  FERRY_REQUIRE(options.height <= kSide && options.width <= kSide && options.height >= 8 && options.width >= 8,
                "model resnet20: images must be 8x8 to 32x32 (smaller ones are zero-padded to 32x32), got ",
                options.height, "x", options.width);
  return std::make_unique<Resnet20Model>(std::make_shared<Resnet20Net>(options), options);
}

}  // namespace ferry::train::detail
