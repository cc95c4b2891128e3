#include "train/run_training.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <thread>

#include "comm/link/shaped_communicator.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/metrics.h"
#include "core/progress.h"
#include "train/data/data_loader.h"
#include "train/data/mnist_loader.h"
#include "train/flat_params.h"
#include "train/gradient_codecs.h"
#include "train/models/evaluate.h"
#include "train/models/model.h"
#include "train/ps_setup.h"
#include "train/strategy.h"

namespace ferry::train {
namespace {

constexpr int kTagStats = 60;

// What each worker reports to rank 0 at the end.
struct WorkerStats {
  double train_s = 0;
  double comm_wait_s = 0;
  double bytes_sent = 0;
  double steps = 0;
};

int default_threads(int ranks) {
  int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / std::max(1, ranks));
}

}  // namespace

nlohmann::json run_training(const TrainOptions& o, comm::Communicator& raw_comm) {
  validate(o);
  const StrategyInfo& info = strategy_info(o.algo);
  const Topology topology = resolve_topology(info, o.topology);
  const WorldLayout world = world_layout(o);
  FERRY_REQUIRE(raw_comm.size() == world.num_workers + world.num_servers, "the run needs ",
                world.num_workers + world.num_servers, " ranks (", world.num_workers, " workers + ", world.num_servers,
                " servers) but the communicator has ", raw_comm.size());
  torch::set_num_threads(o.threads_per_rank > 0 ? o.threads_per_rank : default_threads(raw_comm.size()));

  std::unique_ptr<comm::ShapedCommunicator> shaped;
  comm::Communicator* comm = &raw_comm;
  if (o.link.enabled()) {
    shaped = std::make_unique<comm::ShapedCommunicator>(&raw_comm, o.link);
    comm = shaped.get();
  }
  const int rank = comm->rank();

  auto model = make_model(o.model, o.seed);
  std::vector<std::size_t> numels;
  for (const auto& p : model->parameters()) numels.push_back(static_cast<std::size_t>(p.numel()));
  const ps::SgdOptions sgd{o.lr, o.momentum, o.weight_decay, 1.0f};
  const std::string codec = canonical_codec(o);

  if (world.is_server(rank)) {
    run_parameter_server(*comm, world, numels, info.server_mode, sgd, codec, shapes_of(model->parameters()));
    return {};
  }

  // Data: every worker loads the training set and reads its own shard of each epoch.
  Dataset train_set = load_mnist(MnistOptions{o.data_dir, Split::kTrain, {}, o.train_limit});
  Dataset test_set;
  if (rank == 0) test_set = load_mnist(MnistOptions{o.data_dir, Split::kTest, {}, o.test_limit});
  DataLoader loader(train_set, DataLoaderOptions{o.batch, world.num_workers, rank, o.seed, true});

  FlatParams params(model->parameters());
  StrategyOptions strategy_options{topology, world, sgd, codec};
  strategy_options.delayed = o.delayed;
  auto strategy = info.make(StrategyContext{comm, strategy_options});
  strategy->setup(params);

  const std::int64_t steps_per_epoch = loader.steps_per_epoch();
  std::int64_t total_steps = steps_per_epoch * o.epochs;
  if (o.max_steps > 0) total_steps = std::min(total_steps, o.max_steps);

  std::unique_ptr<JsonlWriter> metrics;
  std::unique_ptr<Progress> progress;
  if (rank == 0 && !o.out_dir.empty()) metrics = std::make_unique<JsonlWriter>(o.out_dir + "/metrics.jsonl");
  if (rank == 0 && o.progress)
    progress = std::make_unique<Progress>(total_steps, ProgressOptions{"train " + o.algo, "it"});

  double train_s = 0, eval_s = 0, loss_ema = NAN, last_loss = NAN;
  const double start = now_s();
  std::int64_t it = 0;
  for (int epoch = 0; epoch < o.epochs && it < total_steps; ++epoch) {
    for (std::int64_t s = 0; s < steps_per_epoch && it < total_steps; ++s, ++it) {
      Batch b = loader.batch(epoch, s);
      params.zero_grads();
      auto loss = torch::nn::functional::cross_entropy(model->forward(b.images), b.labels);
      loss.backward();
      params.gather_grads();
      strategy->step(params, it);
      last_loss = loss.item<double>();
      loss_ema = std::isnan(loss_ema) ? last_loss : 0.95 * loss_ema + 0.05 * last_loss;
      if (rank == 0) {
        double t = now_s() - start - eval_s;
        if (metrics)
          metrics->write({{"iter", it}, {"epoch", epoch}, {"t", t}, {"loss", last_loss},
                          {"bytes_sent", comm->counters().bytes_sent}, {"comm_wait_s", strategy->comm_wait_s()}});
        if (progress) {
          char status[64];
          std::snprintf(status, sizeof status, "loss %.3f", loss_ema);
          progress->update(it + 1, status);
        }
      }
    }
    if (o.eval_each_epoch && rank == 0) {
      Stopwatch sw;
      EvalResult r = evaluate(*model, test_set);
      eval_s += sw.elapsed_s();
      if (metrics) metrics->write({{"epoch_end", epoch}, {"t", now_s() - start - eval_s}, {"test_acc", r.accuracy}});
    }
  }
  strategy->finish(params);
  train_s = now_s() - start - eval_s;
  if (progress) progress->finish();

  WorkerStats mine{train_s, strategy->comm_wait_s(), static_cast<double>(comm->counters().bytes_sent),
                   static_cast<double>(it)};
  if (rank != 0) {
    raw_comm.send(0, kTagStats, std::as_bytes(std::span(&mine, 1)));
    return {};
  }
  std::vector<WorkerStats> all{mine};
  for (int w = 1; w < world.num_workers; ++w) {
    comm::Message m = raw_comm.recv(w, kTagStats);
    WorkerStats s;
    FERRY_CHECK(m.data.size() == sizeof s);
    std::memcpy(&s, m.data.data(), sizeof s);
    all.push_back(s);
  }
  double max_train = 0, wait_frac = 0, bytes = 0;
  for (const auto& s : all) {
    max_train = std::max(max_train, s.train_s);
    wait_frac += s.comm_wait_s / std::max(s.train_s, 1e-9) / all.size();
    bytes += s.bytes_sent / all.size();
  }
  EvalResult final_eval = evaluate(*model, test_set);
  nlohmann::json summary = {
      {"algo", o.algo},
      {"topology", topology_name(topology)},
      {"np", o.num_workers},
      {"servers", world.num_servers},
      {"model", o.model},
      {"parameters", model->parameter_count()},
      {"epochs", o.epochs},
      {"batch", o.batch},
      {"lr", o.lr},
      {"seed", o.seed},
      {"link", comm::describe(o.link)},
      {"codec", codec},
      {"iterations", it},
      {"samples_per_s", static_cast<double>(it) * o.batch * o.num_workers / max_train},
      {"test_acc", final_eval.accuracy},
      {"test_loss", final_eval.mean_loss},
      {"final_train_loss", loss_ema},
      {"wall_s", max_train},
      {"bytes_sent_per_worker", bytes},
      {"comm_wait_fraction", wait_frac},
  };
  if (!o.out_dir.empty()) write_json_file(o.out_dir + "/summary.json", summary);
  return summary;
}

}  // namespace ferry::train
