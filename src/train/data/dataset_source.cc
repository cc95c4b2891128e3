#include "train/data/dataset_source.h"

#include <filesystem>

#include "core/error.h"
#include "train/data/cifar10_loader.h"
#include "train/data/mnist_loader.h"
#include "train/data/synthetic_dataset.h"

namespace ferry::train {
namespace {

namespace fs = std::filesystem;

bool looks_like_cifar10(const fs::path& dir) {
  std::error_code ec;
  for (const fs::path& d : {dir, dir / "cifar-10-batches-bin"}) {
    for (const char* name : {"data_batch_1.bin", "test_batch.bin", "data_batch_1.bin.gz",
                             "test_batch.bin.gz"}) {
      if (fs::is_regular_file(d / name, ec)) return true;
    }
  }
  return false;
}

std::string source_dir(const std::string& source) {
  return (source == "fashion-mnist" || source.empty()) ? kFashionMnistDir : source;
}

}  // namespace

ItemShape image_item_shape(const std::string& source) {
  if (source != "synthetic" && looks_like_cifar10(source_dir(source))) return {3, 32, 32};
  return {1, 28, 28};
}

Dataset load_dataset(const DatasetSourceOptions& o) {
  FERRY_REQUIRE_OP(o.limit, >=, 0, "data set limit");
  if (o.source == "synthetic") {
    SyntheticOptions so;
    so.size = o.synthetic_size > 0 ? o.synthetic_size : (o.split == Split::kTrain ? 60000 : 10000);
    if (o.limit > 0 && o.limit < so.size) so.size = o.limit;
    so.seed = o.seed;
    so.stream = o.split == Split::kTrain ? 0 : 1;  // same classes, other items
    Dataset d = make_synthetic_dataset(so);
    d.name = o.split == Split::kTrain ? "synthetic/train" : "synthetic/test";
    return d;
  }
  const std::string dir = source_dir(o.source);
  if (looks_like_cifar10(dir)) {
    Cifar10Options co;
    co.dir = dir;
    co.split = o.split;
    co.limit = o.limit;
    return load_cifar10(co);
  }
  MnistOptions mo;
  mo.dir = dir;
  mo.split = o.split;
  mo.limit = o.limit;
  return load_mnist(mo);
}

}  // namespace ferry::train
