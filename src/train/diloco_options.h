// The options of DiLoCo and Streaming DiLoCo, the keys of their --algo spec
// ("diloco:inner_steps=50,outer_lr=0.7"), read in one place for the strategy (diloco_strategy.h),
// canonical_algo() and `ferry advise`'s cost model.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/spec.h"

namespace ferry::train {

struct DilocoOptions {
  std::int64_t inner_steps = 50;  // H
  double outer_lr = 0.7;          // η_out (the paper's)
  double outer_momentum = 0.9;    // μ (the paper's)
  bool nesterov = true;
  // The inner optimizer is the run's --optimizer (AdamW by default, the paper's; optimizer_choice.h)
  // at its --lr-schedule; a caller with its own optimizer sets StrategyOptions::external_optimizer
  // instead (the Python package).
  // N: the first N iterations are S-SGD with the inner optimizer (a warm start, as the paper's
  // runs start from a model pretrained with data parallelism); DiLoCo starts from their weights.
  std::int64_t warm_start_steps = 0;
  // The inner optimizer's learning rate after the warm start, as a multiple of the schedule's
  // (1: the paper's, the same as the warm start's). Each worker's inner steps see 1/N of S-SGD's
  // batch; a smaller batch's noisier steps may want a smaller rate, the outer step's momentum
  // carrying the progress.
  double inner_lr_scale = 1;
  std::int64_t fragments = 1;  // P (streaming)
  std::int64_t overlap = 0;    // τ inner steps (streaming)
  double alpha = 0;            // mixing factor α (streaming)

  // Reads the keys of the diloco or streaming-diloco spec (the streaming ones only for it) with
  // their defaults; InvalidArgument naming the key for a bad value.
  static DilocoOptions read(SpecReader& spec, bool streaming);
  // The options of a whole --algo spec of either strategy (its name says which); unknown keys are
  // an InvalidArgument.
  static DilocoOptions of_spec(const std::string& algo_spec);
};

// Streaming DiLoCo's fragments of a model whose tensors have `numels` elements, in order:
// consecutive tensors, fragment p cut where the running size passes p/P of the total, at least one
// tensor in each. Fragment p holds tensors [cuts[p], cuts[p + 1]) (P + 1 cuts). One tensor never
// splits, so a model whose largest tensor holds most of the weights has one large fragment
// (the cnn's first fully connected layer: 95 % of it). The strategy and `ferry advise` cut alike.
// InvalidArgument naming `algo` when P exceeds the tensors.
std::vector<std::size_t> fragment_cuts(const std::vector<std::size_t>& numels, std::int64_t fragments,
                                       const std::string& algo);

}  // namespace ferry::train
