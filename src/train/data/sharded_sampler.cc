#include "train/data/sharded_sampler.h"

#include <numeric>

#include "core/error.h"
#include "train/data/splitmix64.h"

namespace ferry::train {

ShardedSampler::ShardedSampler(ShardedSamplerOptions options) : options_(options) {
  FERRY_REQUIRE_OP(options_.dataset_size, >, 0, "sampler: dataset size");
  FERRY_REQUIRE_OP(options_.world_size, >, 0, "sampler: world size");
  FERRY_REQUIRE_OP(options_.batch_size, >, 0, "sampler: batch size");
  steps_ = options_.dataset_size / global_batch_size();
  FERRY_REQUIRE(steps_ > 0, "sampler: a global batch of ", global_batch_size(), " items (",
                options_.world_size, " workers x batch ", options_.batch_size,
                ") does not fit in a data set of ", options_.dataset_size, " items");
}

const std::vector<std::int64_t>& ShardedSampler::permutation_locked(std::int64_t epoch) const {
  if (cached_epoch_ != epoch) {
    cached_perm_.resize(static_cast<std::size_t>(options_.dataset_size));
    std::iota(cached_perm_.begin(), cached_perm_.end(), std::int64_t{0});
    if (options_.shuffle) {
      SplitMix64 rng(options_.seed * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(epoch));
      rng.shuffle(cached_perm_);
    }
    cached_epoch_ = epoch;
  }
  return cached_perm_;
}

void ShardedSampler::check_step(std::int64_t epoch, std::int64_t step) const {
  FERRY_REQUIRE_OP(epoch, >=, 0, "sampler: epoch");
  FERRY_REQUIRE(step >= 0 && step < steps_, "sampler: step ", step, " outside [0, ", steps_,
                ")");
}

std::vector<std::int64_t> ShardedSampler::permutation(std::int64_t epoch) const {
  FERRY_REQUIRE_OP(epoch, >=, 0, "sampler: epoch");
  std::lock_guard lock(mutex_);
  return permutation_locked(epoch);
}

std::vector<std::int64_t> ShardedSampler::indices(std::int64_t epoch, std::int64_t step,
                                                  int rank) const {
  check_step(epoch, step);
  FERRY_REQUIRE(rank >= 0 && rank < options_.world_size, "sampler: rank ", rank,
                " outside [0, ", options_.world_size, ")");
  std::lock_guard lock(mutex_);
  const auto& perm = permutation_locked(epoch);
  const auto begin = perm.begin() + step * global_batch_size() + rank * options_.batch_size;
  return {begin, begin + options_.batch_size};
}

std::vector<std::int64_t> ShardedSampler::global_indices(std::int64_t epoch,
                                                         std::int64_t step) const {
  check_step(epoch, step);
  std::lock_guard lock(mutex_);
  const auto& perm = permutation_locked(epoch);
  const auto begin = perm.begin() + step * global_batch_size();
  return {begin, begin + global_batch_size()};
}

std::vector<std::int64_t> ShardedSampler::shard(std::int64_t epoch, int rank) const {
  std::vector<std::int64_t> out;
  out.reserve(static_cast<std::size_t>(steps_ * options_.batch_size));
  for (std::int64_t s = 0; s < steps_; ++s) {
    const auto part = indices(epoch, s, rank);
    out.insert(out.end(), part.begin(), part.end());
  }
  return out;
}

}  // namespace ferry::train
