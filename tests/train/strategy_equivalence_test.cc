// S-SGD is exact data parallelism: N workers on the allreduce and on the parameter server follow
// bit for bit the weights that one process computes with the same arithmetic in the same order,
// and that arithmetic is large-batch SGD (checked in double precision against PyTorch's SGD).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <mutex>

#include "comm/link/shaped_communicator.h"
#include "comm/local/local_communicator.h"
#include "train/data/data_loader.h"
#include "train/data/synthetic_dataset.h"
#include "train/flat_params.h"
#include "train/models/model.h"
#include "train/ps_setup.h"
#include "train/strategy.h"
#include "local_training.h"

namespace ferry::train {
namespace {

constexpr int kSteps = 20;
constexpr std::int64_t kBatch = 16;
constexpr float kLr = 0.05f, kMomentum = 0.9f;

const Dataset& data() {
  static Dataset d = make_synthetic_dataset(SyntheticOptions{2048, 10, 1, 28, 28, 1.0f, 7, 0});
  return d;
}

// Worker 0's weights after kSteps steps of `algo` on `topology` with `workers` (+ `servers`).
std::vector<float> run_distributed(const std::string& algo, Topology topology, int workers, int servers,
                                   const std::string& model_name, bool emulate_link = false) {
  std::vector<float> result;
  testing::CommWrapper shaped;
  if (emulate_link)
    shaped = [](comm::Communicator& raw) {
      return std::make_unique<comm::ShapedCommunicator>(&raw, comm::LinkOptions{1e9, 1e-5});
    };
  testing::run_strategy_locally(
      algo, StrategyOptions{topology, WorldLayout{workers, servers}, ps::SgdOptions{kLr, kMomentum, 0.0f, 1.0f}},
      data(), kBatch, kSteps,
      [&](comm::Communicator& c, int step, FlatParams& params, Strategy&, Model&) {
        if (c.rank() == 0 && step == testing::kAfterFinish) result.assign(params.weights().begin(), params.weights().end());
      },
      model_name, shaped);
  return result;
}

// How a sum over workers is ordered. The parameter server adds the pushes of a key in worker
// order, ((g0 + g1) + g2) + g3 (kv_server.h). The ring allreduce (p2p_collectives.cc) splits the
// flat buffer into `workers` nearly equal chunks; chunk c starts at rank c and travels right, so
// its sum is ((g_c + g_c+1) + g_c+2) + ... (indices mod workers).
enum class SumOrder { kWorkerOrder, kRing };

// The first worker whose gradient starts the sum of flat element i.
int first_summand(SumOrder order, std::size_t i, std::size_t n, int workers) {
  if (order == SumOrder::kWorkerOrder) return 0;
  const std::size_t base = n / workers, rem = n % workers;
  // Chunk c is [c * base + min(c, rem), ...): the first rem chunks hold one element more.
  const std::size_t big = rem * (base + 1);
  return static_cast<int>(i < big ? i / (base + 1) : rem + (i - big) / std::max<std::size_t>(base, 1));
}

// One process computes exactly what the distributed S-SGD computes, in the same order: each
// worker's gradient on its own chunk of the global batch (the same forward and backward on the
// same values, one thread), summed in `order`, then the MXNet SGD update of ps/sgd_optimizer.cc
// with rescale 1/workers: v = mu v - lr (g / N), w += v. The distributed result must be bitwise
// equal whatever the CPU's BLAS kernels: they round each worker's gradient the same way here
// and there.
std::vector<float> run_single_process(int workers, const std::string& model_name, SumOrder order) {
  torch::set_num_threads(1);
  auto model = make_model(model_name, 3);
  FlatParams params(model->parameters());
  const std::size_t n = params.size();
  std::vector<float> velocity(n, 0.0f), sum(n);
  std::vector<std::vector<float>> grads(workers);
  DataLoader loader(data(), DataLoaderOptions{kBatch, workers, 0, 5, true});
  const float rescale = 1.0f / static_cast<float>(workers);
  for (int t = 0; t < kSteps; ++t) {
    Batch b = loader.global_batch(0, t);
    auto images = b.images.chunk(workers), labels = b.labels.chunk(workers);
    for (int w = 0; w < workers; ++w) {
      params.zero_grads();
      torch::nn::functional::cross_entropy(model->forward(images[w].contiguous()), labels[w].contiguous()).backward();
      params.gather_grads();
      grads[w].assign(params.grads().begin(), params.grads().end());
    }
    for (std::size_t i = 0; i < n; ++i) {
      const int first = first_summand(order, i, n, workers);
      float acc = grads[first][i];
      for (int k = 1; k < workers; ++k) acc += grads[(first + k) % workers][i];
      sum[i] = acc;
    }
    auto w = params.weights();
    for (std::size_t i = 0; i < n; ++i) {
      velocity[i] = kMomentum * velocity[i] - kLr * (rescale * sum[i] + 0.0f * w[i]);
      w[i] += velocity[i];
    }
  }
  return {params.weights().begin(), params.weights().end()};
}

// Plain large-batch SGD with PyTorch's own optimizer, in double precision: on the concatenated
// batch, or (per_worker) with the gradient taken as the mean of the per-chunk mean gradients.
// Both are the same number; in double their rounding differences (about 1e-16 relative, grown
// over 20 momentum steps by the factor of a few thousand that float runs show) stay far below
// the 1e-9 the test allows, while a wrong scaling or a lost chunk moves the weights by > 1e-3.
std::vector<double> run_large_batch_sgd(int workers, const std::string& model_name, bool per_worker) {
  torch::set_num_threads(1);
  auto model = make_model(model_name, 3);
  model->module().to(torch::kDouble);
  torch::optim::SGD opt(model->module().parameters(), torch::optim::SGDOptions(kLr).momentum(kMomentum));
  DataLoader loader(data(), DataLoaderOptions{kBatch, workers, 0, 5, true});
  for (int t = 0; t < kSteps; ++t) {
    Batch b = loader.global_batch(0, t);
    const auto images = b.images.to(torch::kDouble);
    opt.zero_grad();
    if (per_worker) {
      auto xs = images.chunk(workers), ys = b.labels.chunk(workers);
      for (int w = 0; w < workers; ++w)
        (torch::nn::functional::cross_entropy(model->forward(xs[w]), ys[w]) / static_cast<double>(workers)).backward();
    } else {
      torch::nn::functional::cross_entropy(model->forward(images), b.labels).backward();
    }
    opt.step();
  }
  std::vector<double> out;
  for (const auto& p : model->parameters()) {
    auto flat = p.detach().reshape({-1}).contiguous();
    out.insert(out.end(), flat.data_ptr<double>(), flat.data_ptr<double>() + flat.numel());
  }
  return out;
}

using testing::max_abs_diff;

TEST(SsgdEquivalence, AllreduceAndParameterServerEqualTheirArithmeticInOneProcess) {
  for (const char* model : {"mlp", "cnn"}) {
    const auto ring = run_single_process(4, model, SumOrder::kRing);
    const auto worker_order = run_single_process(4, model, SumOrder::kWorkerOrder);
    auto initial = make_model(model, 3);
    FlatParams init(initial->parameters());
    std::vector<float> w0(init.weights().begin(), init.weights().end());
    ASSERT_GT(max_abs_diff(ring, w0), 1e-3) << model << ": training did not move the weights";
    EXPECT_EQ(max_abs_diff(run_distributed("ssgd", Topology::kAllreduce, 4, 0, model), ring), 0.0) << model;
    EXPECT_EQ(max_abs_diff(run_distributed("ssgd", Topology::kParameterServer, 4, 2, model), worker_order), 0.0)
        << model;
  }
}

// What the bitwise test does not show: that the per-worker arithmetic is large-batch SGD. Both
// sides in double, with torch::optim::SGD (PyTorch's momentum form b = mu b + g, w -= lr b, equal
// to MXNet's v = mu v - lr g, w += v for a constant lr).
TEST(SsgdEquivalence, MeanOfWorkerGradientsIsLargeBatchSgd) {
  for (const char* model : {"mlp", "cnn"}) {
    const auto whole = run_large_batch_sgd(4, model, false);
    const auto chunks = run_large_batch_sgd(4, model, true);
    double diff = 0;
    for (std::size_t i = 0; i < whole.size(); ++i) diff = std::max(diff, std::abs(whole[i] - chunks[i]));
    EXPECT_LT(diff, 1e-9) << model;
    // ferry's float S-SGD stays near the double large-batch trajectory. Float rounding of the
    // forward and backward (about 6e-8 relative) grows over 20 momentum steps to a few 1e-4 at
    // most on these models; a wrong scaling (2x) or a lost worker moves the weights by > 1e-2.
    const auto ssgd = run_distributed("ssgd", Topology::kAllreduce, 4, 0, model);
    double far = 0;
    for (std::size_t i = 0; i < whole.size(); ++i) far = std::max(far, std::abs(whole[i] - ssgd[i]));
    EXPECT_LT(far, 1e-2) << model;
  }
}

TEST(SsgdEquivalence, WorldSizesAndEmulatedLinkDoNotChangeTheResult) {
  for (int workers : {1, 3}) {
    EXPECT_EQ(max_abs_diff(run_distributed("ssgd", Topology::kAllreduce, workers, 0, "mlp", true),
                           run_single_process(workers, "mlp", SumOrder::kRing)),
              0.0)
        << workers;
    EXPECT_EQ(max_abs_diff(run_distributed("ssgd", Topology::kParameterServer, workers, 3, "mlp", true),
                           run_single_process(workers, "mlp", SumOrder::kWorkerOrder)),
              0.0)
        << workers;
  }
}

TEST(Asgd, OneWorkerIsPlainSgd) {
  // With a single worker there is no staleness: ASGD is SGD step for step.
  EXPECT_EQ(max_abs_diff(run_distributed("asgd", Topology::kParameterServer, 1, 1, "mlp"),
                         run_single_process(1, "mlp", SumOrder::kWorkerOrder)),
            0.0);
}

TEST(FlatParams, ModelSeesFlatWeightsAndGradientsLandInTheFlatBuffer) {
  auto model = make_model("cnn", 1);
  FlatParams params(model->parameters());
  EXPECT_EQ(params.size(), static_cast<std::size_t>(model->parameter_count()));
  params.weights()[0] = 42.0f;
  EXPECT_EQ(model->parameters()[0].reshape({-1})[0].item<float>(), 42.0f);
  auto x = torch::randn({2, 1, 28, 28});
  params.zero_grads();
  model->forward(x).sum().backward();
  params.gather_grads();
  auto last = model->parameters().back();
  std::size_t off = params.offset(params.num_params() - 1);
  EXPECT_EQ(params.grads()[off], last.grad().reshape({-1})[0].item<float>());
  EXPECT_NE(params.grads()[off], 0.0f);
}

// wfbp relies on it: forward() announces each layer, front first, before the layer reads its
// parameters, and the layers together cover parameters() once.
TEST(Model, LayerGateSeesEveryLayerFrontFirst) {
  for (const std::string& name : model_names()) {
    auto model = make_model(name, 1);
    std::vector<std::pair<std::size_t, std::size_t>> seen;
    model->set_layer_gate([&](std::size_t first, std::size_t count) {
      seen.emplace_back(first, count);
      torch::NoGradGuard no_grad;
      model->parameters()[first].reshape({-1})[0].fill_(static_cast<double>(seen.size()));
    });
    const torch::Tensor x = model_input(name) == ModelInput::kTokens ? torch::ones({1, 8}, torch::kLong)
                                                                     : torch::ones({1, 1, 28, 28});
    auto out = model->forward(x);
    const std::size_t n = model->parameters().size();
    ASSERT_FALSE(seen.empty()) << name;
    std::size_t next = 0;
    for (auto [first, count] : seen) {
      EXPECT_EQ(first, next) << name;
      EXPECT_GT(count, 0u) << name;
      next = first + count;
    }
    EXPECT_EQ(next, n) << name;
    // Each gate ran before its layer read the weights: the gated forward equals a forward with
    // every value already written.
    model->set_layer_gate({});
    EXPECT_TRUE(torch::equal(out, model->forward(x))) << name;
  }
}

}  // namespace
}  // namespace ferry::train
