// The training flags that `ferry train` and `ferry compare` share (defined in cmd_train.cc):
// compare checks the flags it passes on to every run against these before any run starts.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "train/train_options.h"

namespace ferry::apps {

// Adds --algo, --topology, --np, ..., --out and the delayed algorithms' flags to `app`.
void add_train_flags(CLI::App& app, train::TrainOptions& o, std::string& link_spec);

}  // namespace ferry::apps
