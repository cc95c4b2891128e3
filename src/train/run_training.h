// One rank's part of a training run: servers serve, workers train with the chosen strategy, and
// rank 0 evaluates, reports progress and writes the summary.
#pragma once

#include <nlohmann/json.hpp>

#include "comm/communicator.h"
#include "train/train_options.h"

namespace ferry::train {

// Runs this rank's role over `comm` (a world of num_workers + num_servers ranks). Returns the
// run's summary on rank 0 (also written to out_dir/summary.json) and an empty object elsewhere.
nlohmann::json run_training(const TrainOptions& options, comm::Communicator& comm);

}  // namespace ferry::train
