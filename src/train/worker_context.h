// What every rank of a training job sets up the same way, for `ferry train` (run_training.h),
// DistributedOptimizer and the parameter servers of a job announced to them: the communicator
// with the job's emulated link (or collectives in a fixed order), the server loop, the strategy,
// the resume and the checkpoints.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "train/checkpoint_coordinator.h"
#include "train/gradient_codecs.h"
#include "train/train_job.h"

namespace torch::nn {
class Module;
}  // namespace torch::nn

namespace ferry::train {

class WorkerContext {
 public:
  // `raw` (the whole world: workers, then servers) outlives this.
  WorkerContext(TrainJob job, comm::Communicator& raw);
  ~WorkerContext();

  const TrainJob& job() const { return job_; }
  // The job's communicator: through the emulated link when it has one, else with fixed-order
  // collectives when deterministic, else `raw`.
  comm::Communicator& comm() { return *comm_; }
  bool is_server() const;

  // Server ranks: runs this rank's server loop for a model of these tensors until every worker
  // has finished.
  void serve(const TensorShapes& shapes);
  // Worker ranks: the job's strategy, on comm().
  std::unique_ptr<Strategy> make_strategy(bool external_optimizer = false);
  // Restores this worker's state from the job's resume point into `strategy` and `params` (and
  // the buffers of `module` when given); a fresh start restores nothing.
  WorkerLoopState resume(Strategy& strategy, FlatParams& params, torch::nn::Module* module = nullptr);
  // The job's checkpoints (never due when it writes none); steps_per_epoch for meta.json.
  std::unique_ptr<CheckpointCoordinator> checkpoints(std::int64_t steps_per_epoch);

 private:
  TrainJob job_;
  comm::Communicator& raw_;
  std::unique_ptr<comm::Communicator> wrapped_;  // the shaped or ordered communicator, if any
  comm::Communicator* comm_;
};

}  // namespace ferry::train
