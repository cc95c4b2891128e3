// The options of wait-free backprop, the keys of its --algo spec ("wfbp:bucket_mb=4"), read in one
// place for the strategy (wfbp_strategy.h), canonical_algo() and `ferry advise`'s cost model.
// --bucket-mb is a shorthand for its key (fold_shorthands()).
#pragma once

#include <string>

#include "core/spec.h"

namespace ferry::train {

struct WfbpOptions {
  double bucket_mb = 4.0;  // tensor-fusion bucket size in MB

  // Reads the keys with their defaults; InvalidArgument naming the key for a bad value.
  static WfbpOptions read(SpecReader& spec);
  // The options of a whole wfbp --algo spec; unknown keys are an InvalidArgument.
  static WfbpOptions of_spec(const std::string& algo_spec);
};

}  // namespace ferry::train
