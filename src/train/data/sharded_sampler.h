// Which items each worker trains on, step by step: one shuffle per epoch shared by all
// workers, cut into disjoint per-worker batches.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

namespace ferry::train {

struct ShardedSamplerOptions {
  std::int64_t dataset_size = 0;  // items in the data set
  int world_size = 1;             // number of workers sharing the data set
  std::int64_t batch_size = 64;   // items per worker per step
  std::uint64_t seed = 1;         // the permutation of epoch e is a function of (seed, e) only
  bool shuffle = true;            // false: the identity order in every epoch
};

// Epoch e uses the permutation π_e of [0, dataset_size) drawn by a Fisher–Yates shuffle with
// SplitMix64 seeded by  seed·0x9E3779B97F4A7C15 + e  (identical in every process). Step s uses
// the global batch π_e[s·N·B, (s+1)·N·B), of which rank r takes the slice [r·B, (r+1)·B).
// The last incomplete global batch is dropped, so every worker runs steps_per_epoch() steps,
// the shards of one epoch are disjoint, and the global batch of a step is the concatenation
// of the ranks' batches in rank order. Thread-safe.
class ShardedSampler {
 public:
  // Throws InvalidArgument for a non-positive size, world size or batch size, or when one
  // global batch (world_size · batch_size) does not fit in the data set.
  explicit ShardedSampler(ShardedSamplerOptions options);

  const ShardedSamplerOptions& options() const { return options_; }
  // Steps per epoch: floor(dataset_size / (world_size · batch_size)).
  std::int64_t steps_per_epoch() const { return steps_; }
  // Items per step over all workers: world_size · batch_size.
  std::int64_t global_batch_size() const { return options_.batch_size * options_.world_size; }

  // The permutation of all items used in `epoch` (epoch >= 0).
  std::vector<std::int64_t> permutation(std::int64_t epoch) const;
  // The batch_size item indices of worker `rank` at (`epoch`, `step`).
  std::vector<std::int64_t> indices(std::int64_t epoch, std::int64_t step, int rank) const;
  // The world_size · batch_size indices of all workers at (`epoch`, `step`), in rank order.
  std::vector<std::int64_t> global_indices(std::int64_t epoch, std::int64_t step) const;
  // All indices worker `rank` visits in `epoch`, step after step.
  std::vector<std::int64_t> shard(std::int64_t epoch, int rank) const;

 private:
  // The cached permutation of `epoch`; caller holds mutex_.
  const std::vector<std::int64_t>& permutation_locked(std::int64_t epoch) const;
  void check_step(std::int64_t epoch, std::int64_t step) const;

  ShardedSamplerOptions options_;
  std::int64_t steps_;
  mutable std::mutex mutex_;                   // guards the cache below
  mutable std::int64_t cached_epoch_ = -1;     // epoch of cached_perm_, -1: none
  mutable std::vector<std::int64_t> cached_perm_;
};

}  // namespace ferry::train
