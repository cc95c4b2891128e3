// `ferry moe simulate`: every (profile, batch, policy) of a sweep through the simulator on one
// recorded trace, and its outputs (simulate.csv, simulate.md, simulate.gp for simulate.png).
#pragma once

#include <string>
#include <vector>

#include "core/report.h"
#include "moe/sim/simulator.h"

namespace ferry::moe {

struct SimulateOptions {
  std::string trace;                       // routing trace (any format read_routing_trace knows)
  std::string model_shape = "mixtral-8x7b";
  std::string weights = "BF16";            // the routed experts' format (F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K, MXFP4)
  std::vector<std::string> profiles = {"a100-pcie4"};
  std::string profiles_file;               // empty: the built-in profiles (src/moe/sim/profiles.json)
  std::string device_mem;                  // GPU memory for the model ("24GiB"); empty: the profile's
  std::vector<int> batches = {1, 4, 16, 64};
  std::vector<std::string> policies = {"ondemand", "lru", "static-hot", "fiddler", "moe-infinity",
                                       "prescope", "prescope-perfect", "oracle"};
  std::string predictor = "cooccurrence";  // prescope's predictor (a predictor spec, see predictor_registry.h)
  int window = 3;                          // PreSched window (layers; 0 = auto from the link/compute ratio)
  int context_tokens = 512;                // KV-cache length per sequence (memory and attention time)
};

struct SimulateRow {
  std::string profile;
  std::uint64_t device_mem_bytes = 0;
  SimResult result;
};

// Validates everything before the first run: unknown profile, shape or policy, batch < 1, a budget
// below one expert, a trace that does not fit the shape -> InvalidArgument; missing or corrupt
// files -> IoError / FormatError.
std::vector<SimulateRow> run_simulate(const SimulateOptions& options);

// The table of one sweep (markdown), with tokens/s relative to the oracle; where the sweep has
// prescope, prescope-perfect and the oracle, a second table splits prescope's gap to the oracle
// into prediction (prescope -> prescope-perfect) and planning (prescope-perfect -> oracle).
std::string simulate_markdown(const std::vector<SimulateRow>& rows);
// simulate.csv, simulate.md (header + table) and simulate.gp; returns simulate.gp, which draws
// simulate.png, for the application to render (core/report.h).
std::vector<PlotScript> write_simulate_outputs(const std::vector<SimulateRow>& rows, const std::string& out_dir,
                                               const std::string& header);

}  // namespace ferry::moe
