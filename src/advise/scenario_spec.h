// One configuration as a user states it (`ferry advise`'s flags) or a run records it
// (summary.json and advise_run.json): the one input of a prediction. The projection table and
// `--validate` both build a ScenarioSpec and call predict_spec, so that a configuration and a
// run of it are predicted by the same code from the same inputs (profile, codec cost, link,
// algorithm options, run length).
#pragma once

#include <cstdint>
#include <string>

#include "advise/cost_model.h"
#include "advise/profile_book.h"
#include "advise/run_record.h"

namespace ferry::advise {

struct ScenarioSpec {
  std::string algo;                  // strategy registry name
  std::string model;                 // zoo name or profile file
  std::string device = "local";      // device profile name or file (device_profile.h)
  std::int64_t batch = 64;           // per worker
  int workers = 4;
  int servers = 1;                   // parameter-server ranks (ignored on allreduce)
  train::Topology topology = train::Topology::kParameterServer;
  double bandwidth_bytes_per_s = 0;  // per NIC; 0: no link (compute and copies only)
  double latency_s = 0;              // one way, per message
  std::string codec = "none";        // codec spec of the pushes
  std::int64_t steps = 0;            // iterations per worker, warm-up included; 0: steady state
};

// The configuration of a measured run: its summary's fields (steps = iterations it ran), the
// algorithm options of advise_run.json, this machine ("local").
ScenarioSpec spec_of(const RunRecord& run);
// The cost model's scenario: the model's profile and codec costs from `book` (which owns them).
Scenario make_scenario(const ScenarioSpec& spec, ProfileBook& book);
// predict(spec.algo, make_scenario(spec, book), k).
Prediction predict_spec(const ScenarioSpec& spec, ProfileBook& book, const MachineConstants& k);

}  // namespace ferry::advise
