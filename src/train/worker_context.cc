#include "train/worker_context.h"

#include "comm/link/shaped_communicator.h"
#include "comm/ordered_communicator.h"
#include "train/ps_setup.h"

namespace ferry::train {

WorkerContext::WorkerContext(TrainJob job, comm::Communicator& raw) : job_(std::move(job)), raw_(raw), comm_(&raw) {
  register_builtin_strategies();  // a job received as JSON (serve_announced_job) looks its algorithm up
  if (job_.options.link.enabled())
    wrapped_ = std::make_unique<comm::ShapedCommunicator>(&raw_, job_.options.link);  // ring collectives already
  else if (job_.options.deterministic)
    wrapped_ = std::make_unique<comm::OrderedCollectivesCommunicator>(&raw_);
  if (wrapped_) comm_ = wrapped_.get();
}

WorkerContext::~WorkerContext() = default;

bool WorkerContext::is_server() const { return job_.world().is_server(raw_.rank()); }

void WorkerContext::serve(const TensorShapes& shapes) {
  std::vector<std::size_t> numels;
  for (const auto& shape : shapes) {
    std::size_t n = 1;
    for (std::int64_t d : shape) n *= static_cast<std::size_t>(d);
    numels.push_back(n);
  }
  run_parameter_server(*comm_, job_.world(), numels, strategy_info(job_.options.algo).server_mode, job_.sgd(),
                       job_.options.codec, shapes, job_.options.pull_codec,
                       ServerCheckpointing{job_.checkpoint_root, job_.resume.dir});
}

std::unique_ptr<Strategy> WorkerContext::make_strategy(bool external_optimizer) {
  return strategy_info(job_.options.algo).make(StrategyContext{comm_, job_.strategy_options(external_optimizer)});
}

WorkerLoopState WorkerContext::resume(Strategy& strategy, FlatParams& params, torch::nn::Module* module) {
  if (job_.resume.dir.empty()) return {};
  return load_worker_state(job_.resume, raw_.rank(), strategy, params, module);
}

std::unique_ptr<CheckpointCoordinator> WorkerContext::checkpoints(std::int64_t steps_per_epoch) {
  const WorldLayout w = job_.world();
  CheckpointPlan plan{job_.checkpoint_root, job_.options.checkpoint_every, job_.options.keep_checkpoints, raw_.rank(),
                      w.num_workers, steps_per_epoch,
                      {{"topology", job_.options.topology}, {"workers", w.num_workers},
                       {"servers", w.num_servers}},
                      job_.config};
  return std::make_unique<CheckpointCoordinator>(raw_, std::move(plan), job_.resume.iterations);
}

}  // namespace ferry::train
