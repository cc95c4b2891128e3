// Predictors chosen by spec (core/spec.h): "next-gate", "previous-token", "cooccurrence" (learns
// online), "cooccurrence:TRACE" (= cooccurrence:trace=TRACE, fitted on a recorded trace),
// "llapor:DIR" (= llapor:dir=DIR, written by `ferry moe fit-predictor`). Unknown keys are refused.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/spec.h"
#include "moe/predict/predictor.h"

namespace ferry::moe {

struct PredictorContext {
  const RouterView* routers = nullptr;  // the model's routers (engine; outlive the predictor); null in trace replay
  int num_layers = 0;                   // of the model or trace being served
  int num_experts = 0;
  int top_k = 0;
};

// A predictor's registry entry (core/registry.h).
struct PredictorEntry {
  std::string name;
  std::string summary;                 // one line for help texts
  std::string positional_key = {};     // "llapor:DIR" means llapor:dir=DIR
  bool needs_routers = false;          // reads the model's routers: not available in trace replay
  // Reads its options from `spec` (calling spec.finish() before any expensive load) and builds
  // the predictor for `ctx`. IoError / FormatError for missing or corrupt files, InvalidArgument
  // for a context it cannot serve.
  std::function<std::unique_ptr<Predictor>(SpecReader& spec, const PredictorContext& ctx)> make;
};

// Adds a predictor to the process's registry; InvalidArgument if the name is taken.
void register_predictor(PredictorEntry entry);
// next-gate, cooccurrence, previous-token, llapor. Idempotent.
void register_builtin_predictors();
// Throws InvalidArgument naming the spec's unknown name (listing the known ones) or unknown key;
// the factories' errors as above.
std::unique_ptr<Predictor> make_predictor(const std::string& spec, const PredictorContext& ctx);
// The entry of a spec's name (InvalidArgument for an unknown one); registers the builtins first.
const PredictorEntry& predictor_entry(const std::string& spec);
// Sorted; for --help.
std::vector<std::string> predictor_names();
// Those that do not need the model's routers: the ones a routing trace can drive (simulate, replay).
std::vector<std::string> trace_predictor_names();

}  // namespace ferry::moe
