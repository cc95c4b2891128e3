// ferry._C's data half (python/ferry/data.py wraps it): ferry's data set loaders and the sharded
// sampler behind `ferry train`, so that a Python script trains on the very batches a `ferry train`
// worker would (same items, same order, same normalised floats).
#include <torch/extension.h>

#include <string>

#include "core/error.h"
#include "train/data/mnist_loader.h"
#include "train/data/sharded_sampler.h"

namespace py = pybind11;
using ferry::train::ShardedSampler;
using ferry::train::ShardedSamplerOptions;

void bind_data(py::module_& m) {
  m.def(
      "load_mnist",
      [](const std::string& dir, const std::string& split, std::int64_t limit) {
        FERRY_REQUIRE(split == "train" || split == "test", "split must be 'train' or 'test', got '", split, "'");
        ferry::train::MnistOptions o;
        o.dir = dir.empty() ? ferry::train::kFashionMnistDir : dir;
        o.split = split == "train" ? ferry::train::Split::kTrain : ferry::train::Split::kTest;
        o.limit = limit;
        ferry::train::Dataset d = [&] {
          py::gil_scoped_release release;
          return ferry::train::load_mnist(o);
        }();
        return py::make_tuple(d.images, d.labels);
      },
      py::arg("dir"), py::arg("split"), py::arg("limit"));

  py::class_<ShardedSampler>(m, "ShardedSampler")
      .def(py::init([](std::int64_t size, int world_size, std::int64_t batch_size, std::uint64_t seed, bool shuffle) {
             return std::make_unique<ShardedSampler>(ShardedSamplerOptions{size, world_size, batch_size, seed, shuffle});
           }),
           py::arg("size"), py::arg("world_size"), py::arg("batch_size"), py::arg("seed"), py::arg("shuffle"))
      .def_property_readonly("steps_per_epoch", &ShardedSampler::steps_per_epoch)
      .def("indices", [](const ShardedSampler& s, std::int64_t epoch, std::int64_t step, int rank) {
        const std::vector<std::int64_t> v = s.indices(epoch, step, rank);
        return torch::tensor(at::ArrayRef<std::int64_t>(v), at::kLong);
      });
}
