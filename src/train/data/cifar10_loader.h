// CIFAR-10 in its binary version ("cifar-10-batches-bin"): each record is one label byte and
// 3072 pixel bytes (1024 red, 1024 green, 1024 blue, row-major 32x32).
#pragma once

#include <string>
#include <vector>

#include "train/data/dataset.h"

namespace ferry::train {

struct Cifar10Options {
  std::string dir;               // directory holding data_batch_{1..5}.bin and test_batch.bin
                                 // (or its "cifar-10-batches-bin" subdirectory); may be .gz
  Split split = Split::kTrain;   // train: data_batch_1..5; test: test_batch
  Normalization norm = {{0.4914f, 0.4822f, 0.4465f}, {0.2470f, 0.2435f, 0.2616f}};  // CIFAR-10
  std::int64_t limit = 0;        // keep only the first `limit` items; 0: all
};

// Loads images as float32 [N, 3, 32, 32] and labels as int64 [N]. Throws IoError when a file
// is missing and FormatError when a file is not a whole number of 3073-byte records or holds
// a label outside [0, 10), naming the file.
Dataset load_cifar10(const Cifar10Options& options);

}  // namespace ferry::train
