#include "train/data/dataset.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/index_select.h>

#include <cstring>

#include "core/error.h"

namespace ferry::train {
namespace {

void check_labels(const std::string& name, const std::int64_t* labels, std::int64_t n,
                  std::int64_t num_classes) {
  for (std::int64_t i = 0; i < n; ++i) {
    FERRY_REQUIRE(labels[i] >= 0 && labels[i] < num_classes, name, ": label ", labels[i],
                  " of item ", i, " is outside [0, ", num_classes, ")");
  }
}

}  // namespace

Dataset make_dataset_from_bytes(std::string name, const std::vector<std::uint8_t>& pixels,
                                const std::vector<std::uint8_t>& labels, std::int64_t channels,
                                std::int64_t height, std::int64_t width,
                                std::int64_t num_classes, const Normalization& norm) {
  const auto n = static_cast<std::int64_t>(labels.size());
  const std::int64_t item = channels * height * width;
  FERRY_REQUIRE(channels > 0 && height > 0 && width > 0, name, ": bad image shape ", channels,
                "x", height, "x", width);
  FERRY_REQUIRE(static_cast<std::int64_t>(pixels.size()) == n * item, name, ": ", pixels.size(),
                " pixel bytes for ", n, " labels of ", item, "-byte images");
  FERRY_REQUIRE(norm.mean.size() == 1 || static_cast<std::int64_t>(norm.mean.size()) == channels,
                name, ": normalization mean needs 1 or ", channels, " values");
  FERRY_REQUIRE(norm.stddev.size() == 1 || static_cast<std::int64_t>(norm.stddev.size()) == channels,
                name, ": normalization stddev needs 1 or ", channels, " values");

  Dataset out;
  out.name = std::move(name);
  out.num_classes = num_classes;
  out.labels = at::empty({n}, at::kLong);
  auto* lab = out.labels.data_ptr<std::int64_t>();
  for (std::int64_t i = 0; i < n; ++i) lab[i] = labels[static_cast<std::size_t>(i)];
  check_labels(out.name, lab, n, num_classes);

  out.images = at::empty({n, channels, height, width}, at::kFloat);
  float* img = out.images.data_ptr<float>();
  const std::int64_t plane = height * width;
  for (std::int64_t c = 0; c < channels; ++c) {
    const float mean = norm.mean.size() == 1 ? norm.mean[0] : norm.mean[c];
    const float sd = norm.stddev.size() == 1 ? norm.stddev[0] : norm.stddev[c];
    FERRY_REQUIRE_OP(sd, >, 0, out.name, ": normalization stddev");
    // Lookup table: 256 possible pixel values.
    float table[256];
    for (int v = 0; v < 256; ++v) table[v] = (static_cast<float>(v) / 255.0f - mean) / sd;
    for (std::int64_t i = 0; i < n; ++i) {
      const std::size_t base = static_cast<std::size_t>(i * item + c * plane);
      for (std::int64_t p = 0; p < plane; ++p) img[base + p] = table[pixels[base + p]];
    }
  }
  return out;
}

Dataset make_dataset_from_floats(std::string name, const std::vector<float>& inputs,
                                 const std::vector<std::int64_t>& labels, std::int64_t channels,
                                 std::int64_t height, std::int64_t width,
                                 std::int64_t num_classes) {
  const auto n = static_cast<std::int64_t>(labels.size());
  FERRY_REQUIRE(static_cast<std::int64_t>(inputs.size()) == n * channels * height * width, name,
                ": ", inputs.size(), " input values for ", n, " labels of ", channels, "x",
                height, "x", width, " images");
  check_labels(name, labels.data(), n, num_classes);
  Dataset out;
  out.name = std::move(name);
  out.num_classes = num_classes;
  out.images = at::empty({n, channels, height, width}, at::kFloat);
  if (!inputs.empty())
    std::memcpy(out.images.data_ptr<float>(), inputs.data(), inputs.size() * sizeof(float));
  out.labels = at::empty({n}, at::kLong);
  if (n > 0)
    std::memcpy(out.labels.data_ptr<std::int64_t>(), labels.data(), labels.size() * 8);
  return out;
}

Batch gather(const Dataset& data, const std::vector<std::int64_t>& indices) {
  const std::int64_t n = data.size();
  for (auto i : indices)
    FERRY_REQUIRE(i >= 0 && i < n, data.name, ": item index ", i, " outside [0, ", n, ")");
  // from_blob does not copy; index_select below does, so `idx` may die afterwards.
  at::Tensor idx = at::from_blob(const_cast<std::int64_t*>(indices.data()),
                                 {static_cast<std::int64_t>(indices.size())}, at::kLong);
  Batch out;
  out.images = at::index_select(data.images, 0, idx);
  out.labels = at::index_select(data.labels, 0, idx);
  return out;
}

Dataset head(const Dataset& data, std::int64_t count) {
  if (count <= 0 || count >= data.size()) return data;
  Dataset out = data;
  out.images = data.images.narrow(0, 0, count);
  out.labels = data.labels.narrow(0, 0, count);
  return out;
}

}  // namespace ferry::train
