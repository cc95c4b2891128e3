#include "train/data/mnist_loader.h"

#include <filesystem>
#include <vector>

#include "core/error.h"
#include "train/data/idx_file.h"

namespace ferry::train {
namespace {

namespace fs = std::filesystem;

std::string find_one(const std::string& dir, const std::string& prefix, const std::string& kind,
                     const std::string& idx) {
  const std::vector<std::string> names = {
      prefix + "-" + kind + "-" + idx + "-ubyte.gz",
      prefix + "-" + kind + "-" + idx + "-ubyte",
      prefix + "-" + kind + "." + idx + "-ubyte",
      prefix + "-" + kind + "." + idx + "-ubyte.gz",
  };
  std::string tried;
  for (const auto& name : names) {
    const fs::path p = fs::path(dir) / name;
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) return p.string();
    tried += (tried.empty() ? "" : ", ") + name;
  }
  FERRY_THROW(IoError, dir, ": no MNIST-format ", kind, " file (tried ", tried, ")");
}

}  // namespace

std::pair<std::string, std::string> find_mnist_files(const std::string& dir, Split split) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    FERRY_THROW(IoError, dir, ": no such directory (expected MNIST-format IDX files)");
  const std::string prefix = split == Split::kTrain ? "train" : "t10k";
  return {find_one(dir, prefix, "images", "idx3"), find_one(dir, prefix, "labels", "idx1")};
}

Dataset load_mnist(const MnistOptions& options) {
  FERRY_REQUIRE_OP(options.limit, >=, 0, options.split == Split::kTrain ? "--train-limit" : "--test-limit");
  const auto [image_path, label_path] = find_mnist_files(options.dir, options.split);
  IdxArray images = read_idx_file(image_path, kIdxImagesMagic);
  IdxArray labels = read_idx_file(label_path, kIdxLabelsMagic);
  if (images.dims[0] != labels.dims[0]) {
    FERRY_THROW(FormatError, image_path, " holds ", images.dims[0], " images but ", label_path,
                " holds ", labels.dims[0], " labels; expected the same count");
  }
  for (std::size_t i = 0; i < labels.data.size(); ++i) {
    if (labels.data[i] > 9)
      FERRY_THROW(FormatError, label_path, ": label ", int(labels.data[i]), " of item ", i,
                  " is outside [0, 10)");
  }
  std::int64_t n = images.dims[0];
  const std::int64_t rows = images.dims[1], cols = images.dims[2];
  if (options.limit > 0 && options.limit < n) {
    n = options.limit;
    images.data.resize(static_cast<std::size_t>(n * rows * cols));
    labels.data.resize(static_cast<std::size_t>(n));
  }
  fs::path dir_path = fs::path(options.dir);
  if (dir_path.filename().empty()) dir_path = dir_path.parent_path();  // "dir/" -> "dir"
  const std::string name = dir_path.filename().string() +
                           (options.split == Split::kTrain ? "/train" : "/test");
  return make_dataset_from_bytes(name, images.data, labels.data, 1, rows, cols, 10, options.norm);
}

}  // namespace ferry::train
