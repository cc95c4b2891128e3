// The training flags that `ferry train` and `ferry compare` share (defined in cmd_train.cc):
// compare checks the flags it passes on to every run against these before any run starts.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "train/strategy.h"
#include "train/train_options.h"

namespace ferry::apps {

// Adds --algo, --topology, --np, ..., --out and the algorithms' shorthand flags to `app`; the values
// of the flags that stand for spec keys land in `shorthands` (add_algo_shorthand_flags).
void add_train_flags(CLI::App& app, train::TrainOptions& o, std::string& link_spec,
                     std::vector<train::SpecShorthand>& shorthands);

// The flags that stand for keys of the algorithms' specs (--sync-every: localsgd:sync_every), of
// `ferry train` and `ferry advise`: `shorthands` gets one entry per flag, its value as given
// (empty when not), for train::fold_shorthands() to fold into an --algo spec.
void add_algo_shorthand_flags(CLI::App& app, std::vector<train::SpecShorthand>& shorthands);

}  // namespace ferry::apps
