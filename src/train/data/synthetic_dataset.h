// A synthetic, learnable classification data set, bit-identical for a seed on every machine.
#pragma once

#include <cstdint>

#include "train/data/dataset.h"

namespace ferry::train {

struct SyntheticOptions {
  std::int64_t size = 1024;       // number of items
  std::int64_t num_classes = 10;  // number of labels
  std::int64_t channels = 1;      // image shape [channels, height, width]
  std::int64_t height = 28;
  std::int64_t width = 28;
  float noise = 1.0f;             // amplitude of the uniform noise added to each class pattern
  std::uint64_t seed = 1;         // class patterns and items derive from it (SplitMix64)
  std::uint64_t stream = 0;       // items come from stream `stream` of the seed: other streams
                                  // give other items of the same classes (train 0, test 1)
};

// Each class c has a fixed random ±1 pattern P_c; item i has a uniform random label y_i and
// input P_{y_i} + noise·U(-1, 1) per pixel. Same options → same bytes on every machine.
Dataset make_synthetic_dataset(const SyntheticOptions& options);

}  // namespace ferry::train
