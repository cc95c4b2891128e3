// One worker's view of a data set: its batch at each (epoch, step), and the global batch of
// all workers at that step (what single-process SGD on the concatenated batch would see).
#pragma once

#include <cstdint>

#include "train/data/dataset.h"
#include "train/data/sharded_sampler.h"

namespace ferry::train {

struct DataLoaderOptions {
  std::int64_t batch_size = 64;  // items per worker per step
  int world_size = 1;            // number of workers
  int rank = 0;                  // this worker, in [0, world_size)
  std::uint64_t seed = 1;        // shuffle seed, the same on every worker
  bool shuffle = true;           // false: the data set order in every epoch
};

class DataLoader {
 public:
  // Keeps a (cheap, reference-counted) copy of `data`. Throws InvalidArgument for a bad rank
  // or when one global batch does not fit in the data set.
  DataLoader(const Dataset& data, const DataLoaderOptions& options);

  // Steps each worker runs per epoch (the last incomplete global batch is dropped).
  std::int64_t steps_per_epoch() const { return sampler_.steps_per_epoch(); }
  // This worker's batch at (`epoch`, `step`): batch_size items.
  Batch batch(std::int64_t epoch, std::int64_t step) const;
  // All workers' batches at (`epoch`, `step`) concatenated in rank order.
  Batch global_batch(std::int64_t epoch, std::int64_t step) const;

  const ShardedSampler& sampler() const { return sampler_; }
  const Dataset& dataset() const { return data_; }
  const DataLoaderOptions& options() const { return options_; }

 private:
  Dataset data_;
  DataLoaderOptions options_;
  ShardedSampler sampler_;
};

}  // namespace ferry::train
