// Loads a data set named on the command line: "fashion-mnist", "synthetic", or a directory
// of MNIST-format IDX files or CIFAR-10 binary files.
#pragma once

#include <cstdint>
#include <string>

#include "train/data/dataset.h"

namespace ferry::train {

struct DatasetSourceOptions {
  std::string source = "fashion-mnist";  // "fashion-mnist" (Debian's copy), "synthetic", or a
                                         // directory: CIFAR-10 if it holds data_batch_1.bin or
                                         // test_batch.bin (or cifar-10-batches-bin/), else MNIST
  Split split = Split::kTrain;           // train or test part
  std::int64_t limit = 0;                // keep only the first `limit` items; 0: all
  std::int64_t synthetic_size = 0;       // "synthetic": items; 0: 60000 train / 10000 test
  std::uint64_t seed = 1;                // "synthetic": data seed (train and test share the
                                         // class patterns, not the items)
};

// The item shape load_dataset(source) gives, without loading it: 3 x 32 x 32 for a CIFAR-10
// folder, 1 x 28 x 28 for the others (Fashion-MNIST, MNIST-format folders, "synthetic").
struct ItemShape {
  std::int64_t channels, height, width;
};
ItemShape image_item_shape(const std::string& source);

// Loads the data set. Throws IoError / FormatError like the loaders it calls, naming the path.
Dataset load_dataset(const DatasetSourceOptions& options);

}  // namespace ferry::train
