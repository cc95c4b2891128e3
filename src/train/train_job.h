// One training job as every rank runs it: the world, the resolved algorithm and codec specs, the
// global optimizer, the link and the checkpoints. Built by one function, make_train_job(), from
// either front end (`ferry train`'s TrainOptions; DistributedOptimizerOptions through the same
// TrainOptions), sent to the parameter servers of an announced job in its one JSON form, and run
// by one WorkerContext (worker_context.h).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "ps/sgd_optimizer.h"
#include "train/checkpoint_coordinator.h"
#include "train/strategy.h"
#include "train/train_options.h"

namespace ferry::train {

struct TrainJob {
  // The options as given, resolved: the canonical algorithm, codec and pull codec specs
  // (canonical_algo, canonical_codec, canonical_pull_codec; pull_codec "" = fp32 pulls), the
  // topology named, servers only on the parameter-server topology. The job's JSON carries the
  // fields the option table marks for it (train_option_fields.h, OptionPlace::kJob).
  TrainOptions options;
  float rescale = 1.0f;  // the global optimizer's gradient rescale (ps::SgdOptions)
  // Checkpoints: where they go ("" = none), what their metadata records (job_config(); a resume
  // must match it), and the checkpoint this job continues from.
  std::string checkpoint_root;
  nlohmann::json config;
  ResumePoint resume;

  Topology topology() const;
  WorldLayout world() const { return WorldLayout{options.num_workers, options.num_servers}; }
  // The global optimizer.
  ps::SgdOptions sgd() const { return ps::SgdOptions{options.lr, options.momentum, options.weight_decay, rescale}; }
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
