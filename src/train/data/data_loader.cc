#include "train/data/data_loader.h"

#include "core/error.h"

namespace ferry::train {
namespace {

ShardedSamplerOptions sampler_options(const Dataset& data, const DataLoaderOptions& o) {
  FERRY_REQUIRE(o.world_size > 0 && o.rank >= 0 && o.rank < o.world_size, "data loader: rank ",
                o.rank, " outside [0, ", o.world_size, ")");
  ShardedSamplerOptions s;
  s.dataset_size = data.size();
  s.world_size = o.world_size;
  s.batch_size = o.batch_size;
  s.seed = o.seed;
  s.shuffle = o.shuffle;
  return s;
}

}  // namespace

DataLoader::DataLoader(const Dataset& data, const DataLoaderOptions& options)
    : data_(data), options_(options), sampler_(sampler_options(data, options)) {}

Batch DataLoader::batch(std::int64_t epoch, std::int64_t step) const {
  return gather(data_, sampler_.indices(epoch, step, options_.rank));
}

Batch DataLoader::global_batch(std::int64_t epoch, std::int64_t step) const {
  return gather(data_, sampler_.global_indices(epoch, step));
}

}  // namespace ferry::train
