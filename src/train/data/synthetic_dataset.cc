#include "train/data/synthetic_dataset.h"

#include <vector>

#include "core/error.h"
#include "train/data/splitmix64.h"

namespace ferry::train {

Dataset make_synthetic_dataset(const SyntheticOptions& o) {
  FERRY_REQUIRE_OP(o.size, >=, 0, "synthetic size");
  FERRY_REQUIRE_OP(o.num_classes, >, 0, "synthetic num_classes");
  FERRY_REQUIRE(o.channels > 0 && o.height > 0 && o.width > 0, "synthetic image shape must be "
                "greater than 0, got ", o.channels, "x", o.height, "x", o.width);
  const std::int64_t item = o.channels * o.height * o.width;
  SplitMix64 pattern_rng(o.seed);
  std::vector<float> patterns(static_cast<std::size_t>(o.num_classes * item));
  for (auto& v : patterns) v = (pattern_rng.next() >> 63) ? 1.0f : -1.0f;
  // Items: an independent generator per stream, decorrelated from the patterns' one.
  SplitMix64 rng(SplitMix64(o.seed ^ 0xD1B54A32D192ED03ull).next() + o.stream);

  std::vector<std::int64_t> labels(static_cast<std::size_t>(o.size));
  std::vector<float> inputs(static_cast<std::size_t>(o.size * item));
  for (std::int64_t i = 0; i < o.size; ++i) {
    const auto y = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(o.num_classes)));
    labels[static_cast<std::size_t>(i)] = y;
    const float* p = patterns.data() + y * item;
    float* x = inputs.data() + i * item;
    for (std::int64_t k = 0; k < item; ++k)
      x[k] = p[k] + o.noise * static_cast<float>(2.0 * rng.uniform() - 1.0);
  }
  return make_dataset_from_floats("synthetic", inputs, labels, o.channels, o.height, o.width,
                                  o.num_classes);
}

}  // namespace ferry::train
