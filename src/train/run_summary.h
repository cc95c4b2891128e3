// The end of a training run: each worker's figures gathered on rank 0, and the run's summary
// (summary.json) made from them: throughput, bytes, waiting, accuracy and a hash of the weights.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "comm/communicator.h"
#include "train/models/evaluate.h"
#include "train/train_options.h"

namespace ferry::train {

// What each worker reports to rank 0 at the end (sent as raw bytes: doubles only).
struct WorkerStats {
  double train_s = 0;
  double comm_wait_s = 0;
  double bytes_sent = 0;
  double steps = 0;
  double bad_steps = 0;  // iterations whose gradient was not finite (skipped)
  double bytes_recv = 0;
};

// Rank 0: every worker's stats, its own first. Other workers send theirs and get nullopt.
// `comm` is the unshaped communicator (the report is not the run's traffic).
std::optional<std::vector<WorkerStats>> gather_worker_stats(comm::Communicator& comm, int num_workers,
                                                            const WorkerStats& mine);

// Everything the summary says that the workers' stats do not.
struct RunSummaryInput {
  // The run's options, resolved (TrainJob::options: canonical specs, the topology named); those
  // the option table marks for summary.json (train_option_fields.h) are written. The caller's,
  // outlives the call.
  const TrainOptions* options = nullptr;
  std::int64_t parameters = 0;       // the model's parameter count
  std::int64_t iterations = 0;       // iterations done, counting those before a resume
  std::int64_t resumed_from = 0;     // iterations done before this run (0: a fresh run)
  double checkpoint_s = 0;           // rank 0's time writing checkpoints
  std::uint64_t weights_hash = 0;    // FNV-1a 64 of rank 0's final weights (fnv1a64)
  EvalResult final_eval;             // rank 0's test-set evaluation of the final model
  double final_train_loss = 0;       // the training loss average at the end
};

// summary.json: the slowest worker's time is the run's wall time; bytes and the waiting
// fraction are means over the workers.
nlohmann::json make_run_summary(const RunSummaryInput& input, const std::vector<WorkerStats>& workers);

// "%016x" of a 64-bit hash.
std::string hex64(std::uint64_t value);

}  // namespace ferry::train
