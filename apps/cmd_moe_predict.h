// The `ferry moe fit-predictor` subcommand, added to `ferry moe` by cmd_moe.cc.
#pragma once

#include <functional>

namespace CLI { class App; }

namespace ferry::apps {

struct FitPredictorCommand {
  CLI::App* app = nullptr;   // the subcommand (owned by the parent app)
  std::function<int()> run;  // runs it with the parsed flags
};

FitPredictorCommand add_fit_predictor_command(CLI::App& moe);

}  // namespace ferry::apps
