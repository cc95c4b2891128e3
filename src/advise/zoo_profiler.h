// The short profile run behind `ferry advise --model NAME`: builds the zoo model with
// train::make_model, runs a few training iterations on random input with one libtorch thread
// (as `ferry train --threads 1` runs each rank) and times forward, backward and the update
// (rounds of iterations: the median over rounds of each round's fastest, and the rounds' spread),
// and when each tensor's gradient is ready and when forward first reads it. The only file of
// the module that uses libtorch.
#pragma once

#include <cstdint>
#include <string>

#include "advise/model_profile.h"

namespace ferry::advise {

struct ZooProfileOptions {
  std::int64_t batch = 64;  // per-worker batch
  int warmup = 3;           // untimed iterations first (allocations, caches)
  int rounds = 5;           // timed rounds; each round keeps its fastest pass, the profile the
                            // median of the rounds and their spread as compute_noise
  int iterations = 4;       // timed iterations per round
  std::uint64_t seed = 1;   // model init and the random input
};

// InvalidArgument for a name make_model does not know, or a model the profiler cannot feed
// (it tries image batches [B, 1, 28, 28], then token batches [B, 128] of byte ids).
ModelProfile profile_zoo_model(const std::string& name, const ZooProfileOptions& options);

}  // namespace ferry::advise
