// gpt: a decoder-only transformer language model in GPT-2's layout (Radford et al., "Language
// Models are Unsupervised Multitask Learners", 2019): token and learned position embeddings, six
// pre-LayerNorm blocks (causal multi-head self-attention, 6 heads of 64; MLP 384 → 1536 → 384
// with GELU), a final LayerNorm and an untied output projection to the vocabulary. No dropout,
// so that a run is deterministic. Initialisation as GPT-2: weights N(0, 0.02), the residual
// projections N(0, 0.02/sqrt(2 x blocks)), biases 0, LayerNorm 1 and 0.
//
// Inputs are token ids int64 [B, T] (T <= ModelOptions::context); logits are [B, T, vocab], the
// prediction of each position's next token. At vocab 256 (bytes) and context 128: 10,893,568
// parameters (12 d^2 + 13 d per block at d = 384, plus embeddings and the head), 78 tensors.
#include <ATen/ops/arange.h>
#include <ATen/ops/gelu.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/softmax.h>
#include <torch/nn/init.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include <cmath>
#include <limits>

#include "core/error.h"
#include "train/models/builtin_models.h"

namespace ferry::train::detail {
namespace {

constexpr std::int64_t kWidth = 384;
constexpr std::int64_t kHeads = 6;
constexpr std::int64_t kBlocks = 6;
constexpr double kInitStd = 0.02;

torch::nn::Linear linear(std::int64_t in, std::int64_t out, double stddev) {
  torch::nn::Linear l(in, out);
  torch::nn::init::normal_(l->weight, 0.0, stddev);
  torch::nn::init::zeros_(l->bias);
  return l;
}

torch::nn::LayerNorm layer_norm() { return torch::nn::LayerNorm(torch::nn::LayerNormOptions({kWidth})); }

struct Block : torch::nn::Module {
  Block()
      : ln1(register_module("ln1", layer_norm())),
        qkv(register_module("qkv", linear(kWidth, 3 * kWidth, kInitStd))),
        proj(register_module("proj", linear(kWidth, kWidth, kInitStd / std::sqrt(2.0 * kBlocks)))),
        ln2(register_module("ln2", layer_norm())),
        fc(register_module("fc", linear(kWidth, 4 * kWidth, kInitStd))),
        fc_proj(register_module("fc_proj", linear(4 * kWidth, kWidth, kInitStd / std::sqrt(2.0 * kBlocks)))) {}

  // x [B, T, d]; `future` [T, T] is true above the diagonal (the positions a token may not see).
  at::Tensor forward(const at::Tensor& x, const at::Tensor& future) {
    const std::int64_t b = x.size(0), t = x.size(1), dh = kWidth / kHeads;
    const auto qkv_heads = qkv->forward(ln1->forward(x)).view({b, t, 3, kHeads, dh}).permute({2, 0, 3, 1, 4});
    const at::Tensor q = qkv_heads[0], k = qkv_heads[1], v = qkv_heads[2];  // [B, H, T, dh]
    at::Tensor att = q.matmul(k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(dh)));
    att = at::softmax(att.masked_fill(future, -std::numeric_limits<float>::infinity()), -1);
    const at::Tensor y = att.matmul(v).transpose(1, 2).reshape({b, t, kWidth});
    const at::Tensor h = x + proj->forward(y);
    return h + fc_proj->forward(at::gelu(fc->forward(ln2->forward(h))));
  }

  torch::nn::LayerNorm ln1;
  torch::nn::Linear qkv, proj;
  torch::nn::LayerNorm ln2;
  torch::nn::Linear fc, fc_proj;
};

struct GptNet : torch::nn::Module {
  explicit GptNet(const ModelOptions& o)
      : tokens(register_module("tokens", torch::nn::Embedding(o.vocab, kWidth))),
        positions(register_module("positions", torch::nn::Embedding(o.context, kWidth))) {
    torch::nn::init::normal_(tokens->weight, 0.0, kInitStd);
    torch::nn::init::normal_(positions->weight, 0.0, kInitStd);
    for (std::int64_t i = 0; i < kBlocks; ++i)
      blocks.push_back(register_module("block" + std::to_string(i), std::make_shared<Block>()));
    ln_f = register_module("ln_f", layer_norm());
    head = register_module("head", linear(kWidth, o.vocab, kInitStd));
  }

  torch::nn::Embedding tokens, positions;
  std::vector<std::shared_ptr<Block>> blocks;
  torch::nn::LayerNorm ln_f{nullptr};
  torch::nn::Linear head{nullptr};
};

class GptModel final : public Model {
 public:
  GptModel(std::shared_ptr<GptNet> net, const ModelOptions& o)
      : Model("gpt", net), net_(std::move(net)), context_(o.context) {}

  at::Tensor forward(const at::Tensor& x) override {
    FERRY_REQUIRE(x.dim() == 2 && x.size(1) >= 1 && x.size(1) <= context_,
                  "model gpt: input must be token ids [batch, T] with 1 <= T <= ", context_, ", got ", x.sizes());
    GptNet& n = *net_;
    const std::int64_t t = x.size(1);
    enter_layer(*n.tokens);
    at::Tensor h = n.tokens->forward(x);
    enter_layer(*n.positions);
    h = h + n.positions->forward(at::arange(t, x.options()));
    const at::Tensor future = at::ones({t, t}, x.options().dtype(at::kBool)).triu(1);
    for (const auto& block : n.blocks) {
      enter_layer(*block);
      h = block->forward(h, future);
    }
    enter_layer(*n.ln_f);
    h = n.ln_f->forward(h);
    enter_layer(*n.head);
    return n.head->forward(h);
  }

 private:
  std::shared_ptr<GptNet> net_;
  std::int64_t context_;
};

}  // namespace

std::unique_ptr<Model> make_gpt(const ModelOptions& options) {
  FERRY_REQUIRE_OP(options.vocab, >=, 2, "model gpt: vocabulary");
  FERRY_REQUIRE_OP(options.context, >=, 1, "model gpt: context");
  return std::make_unique<GptModel>(std::make_shared<GptNet>(options), options);
}

}  // namespace ferry::train::detail
