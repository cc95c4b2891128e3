// One training job as every rank runs it: the world, the resolved algorithm and codec specs, the
// global optimizer, the link and the checkpoints. Built by one function, make_train_job(), from
// either front end (`ferry train`'s TrainOptions; DistributedOptimizerOptions through the same
// TrainOptions), sent to the parameter servers of an announced job in its one JSON form, and run
// by one WorkerContext (worker_context.h).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "comm/link/link_options.h"
#include "ps/sgd_optimizer.h"
#include "train/checkpoint_coordinator.h"
#include "train/strategy.h"
#include "train/train_options.h"

namespace ferry::train {

struct TrainJob {
  std::string algo;                // canonical --algo spec (canonical_algo)
  Topology topology = Topology::kAllreduce;
  WorldLayout world;
  ps::SgdOptions sgd;              // the global optimizer
  std::string codec = "none";      // canonical codec spec
  std::string pull_codec;          // canonical pull codec spec; "" = fp32 pulls
  std::int64_t batch = 0;          // per-worker batch (codec thresholds in MXNet's units); 0 = unknown
  comm::LinkOptions link;          // the emulated NIC of every rank; disabled = the raw transport
  bool deterministic = false;      // collectives in a fixed reduction order
  // Checkpoints: where they go ("" = none), every how many iterations (0: when the caller asks),
  // how many are kept, what their metadata records (job_config(); a resume must match it), and
  // the checkpoint this job continues from.
  std::string checkpoint_root;
  std::int64_t checkpoint_every = 0;
  int keep_checkpoints = 2;
  nlohmann::json config;
  ResumePoint resume;

  // What the job's strategy is constructed with.
  StrategyOptions strategy_options(bool external_optimizer = false) const;
  nlohmann::json to_json() const;
  // FormatError naming the first missing or mistyped key.
  static TrainJob from_json(const nlohmann::json& j);
};

// The configuration a job's checkpoints record and a resume must match (every TrainOptions field
// that defines the run, the codec canonical).
nlohmann::json job_config(const TrainOptions& options);

// Validates `options` (train_options.h) and resolves them: the canonical algorithm and codec
// specs, the topology, the checkpoint root and the checkpoint --resume names (checked to fit).
TrainJob make_train_job(const TrainOptions& options);

}  // namespace ferry::train
