// The options of local SGD and post-local SGD, the keys of its --algo spec
// ("localsgd:sync_every=4,post_local=0"), read in one place for the strategy (local_sgd_strategy.h),
// canonical_algo() and `ferry advise`'s cost model. --sync-every and --post-local are shorthands
// for them (fold_shorthands()).
#pragma once

#include <cstdint>
#include <string>

#include "core/spec.h"

namespace ferry::train {

struct LocalSgdOptions {
  std::int64_t sync_every = 4;  // H: average the models every H iterations
  std::int64_t post_local = 0;  // K: S-SGD for the first K iterations (post-local SGD)

  // Reads the keys with their defaults; InvalidArgument naming the key for a bad value.
  static LocalSgdOptions read(SpecReader& spec);
  // The options of a whole localsgd --algo spec; unknown keys are an InvalidArgument.
  static LocalSgdOptions of_spec(const std::string& algo_spec);
};

}  // namespace ferry::train
