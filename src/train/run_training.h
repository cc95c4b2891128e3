// One rank's part of a training run: servers serve, workers train with the chosen strategy, and
// rank 0 evaluates, reports progress and writes the summary.
#pragma once

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "comm/communicator.h"
#include "train/train_options.h"

namespace ferry::train {

// Runs this rank's role over `comm` (a world of num_workers + num_servers ranks). Returns the
// run's summary on rank 0 (also written to out_dir/summary.json) and an empty object elsewhere.
// `on_stall` is called (from a watchdog thread) when a worker makes no progress for
// options.stall_timeout_s; it should end the job (stall_watchdog.h). Empty: no watchdog.
nlohmann::json run_training(const TrainOptions& options, comm::Communicator& comm,
                            const std::function<void(const std::string& why)>& on_stall = {});

}  // namespace ferry::train
