// The options of the delayed parameter-server algorithms (docs/algorithms.md), the keys of their
// --algo specs, read in one place for the strategies (od_sgd_strategy.h, ssd_sgd_strategy.h,
// cd_sgd_strategy.h), canonical_algo() and `ferry advise`'s cost entries:
//
//   odsgd:  warmup_steps=20, lr_local=0, lr_warmup_steps=0
//   ssdsgd: the three above, delay_steps=4, local_update=glu, glu_coef=0.5
//   cdsgd:  the three above, correction_steps=5, threshold=0.005
//
// ferry train's --warmup-steps, --lr-local, --delay-steps, ... are shorthands for them
// (fold_shorthands()).
#pragma once

#include <cstdint>
#include <string>

#include "core/spec.h"

namespace ferry::train {

// The keys all three share.
struct DelayedPsOptions {
  std::int64_t warmup_steps = 20;    // W: plain S-SGD iterations before delaying
  float lr_local = 0;                // local learning rate; 0 = the global --lr
  std::int64_t lr_warmup_steps = 0;  // the local lr ramps linearly over N post-warm-up steps

  // Reads the keys with their defaults; InvalidArgument naming the key for a bad value.
  static DelayedPsOptions read(SpecReader& spec);
  // The options of a whole odsgd --algo spec; unknown keys are an InvalidArgument.
  static DelayedPsOptions of_spec(const std::string& algo_spec);
};

struct SsdSgdOptions {
  DelayedPsOptions delayed;
  std::int64_t delay_steps = 4;  // k: pull the global weights every k iterations
  bool glu = true;               // local_update=glu (global-update compensation) or sgd (none)
  float glu_coef = 0.5f;         // c: weight of the global direction

  static SsdSgdOptions read(SpecReader& spec);
  static SsdSgdOptions of_spec(const std::string& algo_spec);
};

struct CdSgdOptions {
  DelayedPsOptions delayed;
  std::int64_t correction_steps = 5;  // k: a full-precision push every k iterations
  // The threshold of the codec cdsgd runs when no --codec is given (default_codec()); near the
  // built-in models' per-element gradient scale (0.5, MXNet's twobit default, sends mostly zeros
  // for them).
  float threshold = 0.005f;

  static CdSgdOptions read(SpecReader& spec);
  static CdSgdOptions of_spec(const std::string& algo_spec);
  // "twobit:threshold=<threshold>".
  std::string default_codec() const;
};

}  // namespace ferry::train
