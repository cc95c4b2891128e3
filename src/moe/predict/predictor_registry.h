// Predictors chosen by name: "next-gate", "cooccurrence[:TRACE]", "previous-token", "llapor:DIR".
// A spec is NAME or NAME:ARG; the argument is the predictor's (a trace to fit a table on, a
// directory written by `ferry moe fit-predictor`).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "moe/predict/predictor.h"

namespace ferry::moe {

struct PredictorContext {
  const RouterView* routers = nullptr;  // the model's routers (engine; outlive the predictor); null in trace replay
  int num_layers = 0;                   // of the model or trace being served
  int num_experts = 0;
  int top_k = 0;
};

// Builds a predictor from the argument after ':' ("" when none) and the context.
using PredictorFactory = std::function<std::unique_ptr<Predictor>(const std::string& arg, const PredictorContext&)>;
void register_predictor(const std::string& name, PredictorFactory factory);
// next-gate, cooccurrence, previous-token, llapor. Idempotent.
void register_builtin_predictors();
// Throws InvalidArgument naming the spec and listing the known names; the factories throw IoError /
// FormatError for missing or corrupt files and InvalidArgument for a context they cannot serve.
std::unique_ptr<Predictor> make_predictor(const std::string& spec, const PredictorContext& ctx);
std::vector<std::string> predictor_names();

}  // namespace ferry::moe
