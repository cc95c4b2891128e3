// Options of the delayed parameter-server strategies (odsgd, ssdsgd, cdsgd; docs/algorithms.md);
// localsgd's, wfbp's and DiLoCo's are keys of their --algo specs. One struct for all of them so that the CLI, tests
// and `ferry compare` fill one place; each strategy reads only its own fields.
#pragma once

#include <cstdint>
#include <string>

namespace ferry::train {

struct StrategyInfo;

struct DelayedOptions {
  std::int64_t warmup_steps = 20;  // --warmup-steps: plain S-SGD iterations before delaying
  float lr_local = 0;              // --lr-local: local learning rate; 0 = the global --lr
  std::int64_t lr_warmup_steps = 0;  // --lr-warmup-steps: local lr ramps linearly over N steps
  int delay_steps = 4;             // --delay-steps (ssdsgd): pull the global weights every k
  std::string local_update = "glu";  // --local-update (ssdsgd): glu | sgd
  float glu_coef = 0.5f;           // --glu-coef (ssdsgd): weight of the global direction
  int correction_steps = 5;        // --correction-steps (cdsgd): full-precision push every k
  float threshold = 0.005f;        // --threshold (cdsgd): twobit threshold of the default codec
                                   // (near the built-in models' per-element gradient scale; 0.5,
                                   // MXNet's twobit default, sends mostly zeros for them)
};

// Throws InvalidArgument naming the flag of the first bad value.
void validate_delayed_options(const DelayedOptions& options);

// Throws InvalidArgument when the strategy cannot use a codec other than "none" (its takes_codec
// is false: localsgd, wfbp, compute-only exchange weights or fused buckets in fp32).
void validate_algorithm_codec(const StrategyInfo& info, const std::string& codec_spec);

// The codec cdsgd uses when the user gave no --codec: "twobit:threshold=<threshold>".
std::string cdsgd_default_codec(const DelayedOptions& options);

}  // namespace ferry::train
