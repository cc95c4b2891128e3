// MNIST-format data sets (MNIST, Fashion-MNIST, KMNIST, ...) from a directory of IDX files.
#pragma once

#include <string>
#include <utility>

#include "train/data/dataset.h"

namespace ferry::train {

// Where Debian's dataset-fashion-mnist package installs Fashion-MNIST.
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

struct MnistOptions {
  std::string dir = kFashionMnistDir;  // directory with {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]
  Split split = Split::kTrain;         // train (train-*) or test (t10k-*) files
  Normalization norm = {};             // defaults: Fashion-MNIST mean 0.2860, stddev 0.3530
  std::int64_t limit = 0;              // keep only the first `limit` items; 0: all
};

// Loads images as float32 [N, 1, rows, cols] and labels as int64 [N]. For each file, tries
// "<prefix>-images-idx3-ubyte.gz", "<prefix>-images-idx3-ubyte" and
// "<prefix>-images.idx3-ubyte" (likewise labels). Throws IoError when the directory or a file
// is missing (listing the names tried), FormatError for a corrupt file, and FormatError when
// the image and label files hold different item counts, each naming the file(s).
Dataset load_mnist(const MnistOptions& options);

// Paths of the image and label files load_mnist would read; throws like load_mnist.
std::pair<std::string, std::string> find_mnist_files(const std::string& dir, Split split);

}  // namespace ferry::train
