// The training flags of `ferry train`, made from the option table (train/train_option_fields.h),
// and those `ferry compare` passes on: compare checks the flags it passes to every run against
// them before any run starts.
#pragma once

#include <deque>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "train/strategy.h"
#include "train/train_option_fields.h"
#include "train/train_options.h"

namespace ferry::apps {

class TrainFlags {
 public:
  // Adds to `app` a flag for every row of the table in `place` (kFlag: all of ferry train's;
  // kCompare: those ferry compare takes) bound to `options`, and the algorithms' shorthand flags
  // (add_algo_shorthand_flags). `app` and `options` outlive this.
  TrainFlags(CLI::App& app, train::TrainOptions& options, train::OptionPlace place);

  // After app.parse(): the flags whose text is parsed (--link, --inject-nan-at) and the negated
  // switches (--no-progress) land in the options, and the shorthand flags are folded into --algo
  // (train::fold_shorthands; an InvalidArgument naming the flag).
  void apply();

 private:
  // The value of a flag that is not bound to its field directly.
  struct Pending {
    const train::OptionField* field;
    std::string text;
    bool set = false;
  };
  CLI::App& app_;
  train::TrainOptions& options_;
  std::deque<Pending> pending_;  // a deque: CLI11 holds pointers to its elements
  std::vector<train::SpecShorthand> shorthands_;
};

// The flags that stand for keys of the algorithms' specs (--sync-every: localsgd:sync_every), of
// `ferry train` and `ferry advise`: `shorthands` gets one entry per flag, its value as given
// (empty when not), for train::fold_shorthands() to fold into an --algo spec.
void add_algo_shorthand_flags(CLI::App& app, std::vector<train::SpecShorthand>& shorthands);

}  // namespace ferry::apps
