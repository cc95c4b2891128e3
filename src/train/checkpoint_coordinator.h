// A worker's side of checkpoints (checkpoint.h has the format): continuing from one (--resume),
// and writing them every --checkpoint-every iterations and at the end. Every worker writes its
// own state file; rank 0, once every worker has said so, writes meta.json and makes the
// checkpoint visible (parameter servers write theirs when their workers ask, ps_setup.h).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "comm/communicator.h"
#include "train/flat_params.h"
#include "train/strategy.h"

namespace torch::nn {
class Module;
}  // namespace torch::nn

namespace ferry::train {

// The checkpoint a run continues from; dir "" (and iterations 0) when it starts afresh.
struct ResumePoint {
  std::string dir;
  std::int64_t iterations = 0;
};

// The checkpoint --resume names ("" = a fresh start), checked to fit a job of this configuration
// (train_job.h's job_config()) and world (check_resumable).
ResumePoint find_resume_point(const std::string& resume, const nlohmann::json& config, const WorldLayout& world);

// What a worker's state file holds besides the strategy's own state.
struct WorkerLoopState {
  double loss_ema = NAN;          // the training loss average shown by the progress line
  std::int64_t bad_in_row = 0;    // non-finite iterations in a row (TrainerStep)
};

// Loads this worker's state of `resume` into `strategy` and `params`, and the buffers of `module`
// (batch norm's running statistics) when given and saved; returns the loop's part.
WorkerLoopState load_worker_state(const ResumePoint& resume, int rank, Strategy& strategy, FlatParams& params,
                                  torch::nn::Module* module = nullptr);

struct CheckpointPlan {
  std::string root;                 // where checkpoints go (TrainJob::checkpoint_root); "" = none
  std::int64_t every = 0;           // --checkpoint-every
  int keep = 2;                     // --keep-checkpoints
  int rank = 0;                     // this worker
  int num_workers = 1;              // workers that each write a state file
  std::int64_t steps_per_epoch = 1; // for meta.json's epoch
  nlohmann::json world;             // meta.json's "world" (topology, workers, servers)
  nlohmann::json config;            // meta.json's "config" (job_config(), train_job.h)
};

class CheckpointCoordinator {
 public:
  // `comm` is the run's unshaped communicator (the "written" messages are control traffic, not
  // charged to the emulated link); it outlives this object. `start_it`: iterations already done
  // (the checkpoint resumed from, which need not be written again).
  CheckpointCoordinator(comm::Communicator& comm, CheckpointPlan plan, std::int64_t start_it);

  bool enabled() const { return !plan_.root.empty(); }
  // A periodic checkpoint after `done` of `total` iterations (the last one is final_due's).
  bool due(std::int64_t done, std::int64_t total) const {
    return enabled() && plan_.every > 0 && done % plan_.every == 0 && done < total;
  }
  // The final checkpoint after `done` iterations of a run that checkpoints every N, so a later
  // run may continue (e.g. with more --epochs): due unless the last one written is of the same
  // iteration.
  bool final_due(std::int64_t done) const { return enabled() && plan_.every > 0 && done != last_; }

  // Writes the checkpoint of `done` iterations (a collective among the workers: each calls it
  // with the same `done`), with the buffers of `module` when given. Returns the seconds it took.
  double save(std::int64_t done, Strategy& strategy, FlatParams& params, const WorkerLoopState& loop,
              torch::nn::Module* module = nullptr);

  // Seconds spent in save() so far.
  double seconds() const { return seconds_; }

 private:
  comm::Communicator& comm_;
  CheckpointPlan plan_;
  std::int64_t last_;
  double seconds_ = 0;
};

}  // namespace ferry::train
