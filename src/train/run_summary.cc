#include "train/run_summary.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <span>

#include "comm/message_tags.h"
#include "core/error.h"
#include "train/models/model.h"
#include "train/train_option_fields.h"

namespace ferry::train {

std::string hex64(std::uint64_t v) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(v));
  return text;
}

std::optional<std::vector<WorkerStats>> gather_worker_stats(comm::Communicator& comm, int num_workers,
                                                            const WorkerStats& mine) {
  if (comm.rank() != 0) {
    comm.send(0, comm::kTagTrainStats, std::as_bytes(std::span(&mine, 1)));
    return std::nullopt;
  }
  std::vector<WorkerStats> all{mine};
  for (int w = 1; w < num_workers; ++w) {
    comm::Message m = comm.recv(w, comm::kTagTrainStats);
    WorkerStats s;
    FERRY_CHECK(m.data.size() == sizeof s);
    std::memcpy(&s, m.data.data(), sizeof s);
    all.push_back(s);
  }
  return all;
}

nlohmann::json make_run_summary(const RunSummaryInput& in, const std::vector<WorkerStats>& all) {
  const TrainOptions& o = *in.options;
  double max_train = 0, wait_frac = 0, bytes = 0, bytes_recv = 0, all_bad = 0;
  for (const auto& s : all) {
    all_bad += s.bad_steps;
    max_train = std::max(max_train, s.train_s);
    wait_frac += s.comm_wait_s / std::max(s.train_s, 1e-9) / all.size();
    bytes += s.bytes_sent / all.size();
    bytes_recv += s.bytes_recv / all.size();
  }
  const double steps = static_cast<double>(in.iterations - in.resumed_from);
  nlohmann::json summary = options_json(o, OptionPlace::kSummary);
  summary.update({
      {"parameters", in.parameters},
      {"iterations", in.iterations},
      {"samples_per_s", steps * o.batch * o.num_workers / std::max(max_train, 1e-9)},
      {"resumed_from", in.resumed_from},
      {"skipped_steps", all_bad},
      {"checkpoint_s", in.checkpoint_s},
      {"weights_fnv1a", hex64(in.weights_hash)},
      {"test_acc", in.final_eval.accuracy},
      {"test_loss", in.final_eval.mean_loss},
      {"final_train_loss", in.final_train_loss},
      {"wall_s", max_train},
      {"bytes_sent_per_worker", bytes},
      {"bytes_recv_per_worker", bytes_recv},
      {"comm_wait_fraction", wait_frac},
  });
  // Token models: exp of the mean cross-entropy per predicted token.
  if (model_input(o.model) == ModelInput::kTokens) summary["test_perplexity"] = std::exp(in.final_eval.mean_loss);
  return summary;
}

}  // namespace ferry::train
