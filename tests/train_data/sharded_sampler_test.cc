#include "train/data/sharded_sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "core/error.h"
#include "train/data/data_loader.h"
#include "train/data/splitmix64.h"
#include "train/data/synthetic_dataset.h"

namespace ferry::train {
namespace {

ShardedSampler make(std::int64_t size, int world, std::int64_t batch, std::uint64_t seed = 7) {
  ShardedSamplerOptions o;
  o.dataset_size = size;
  o.world_size = world;
  o.batch_size = batch;
  o.seed = seed;
  return ShardedSampler(o);
}

TEST(SplitMix64, KnownFirstOutputs) {
  // Reference values of SplitMix64 seeded with 0 (as in the published reference code).
  SplitMix64 rng(0);
  EXPECT_EQ(rng.next(), 0xE220A8397B1DCDAFull);
  EXPECT_EQ(rng.next(), 0x6E789E6AA1B965F4ull);
}

TEST(ShardedSampler, ShardsAreDisjointAndCoverAllButTheDroppedTail) {
  for (int world : {1, 2, 3, 4, 7}) {
    const std::int64_t size = 1001, batch = 13;
    ShardedSampler s = make(size, world, batch);
    EXPECT_EQ(s.steps_per_epoch(), size / (world * batch));
    std::set<std::int64_t> seen;
    for (int r = 0; r < world; ++r) {
      auto shard = s.shard(0, r);
      EXPECT_EQ(static_cast<std::int64_t>(shard.size()), s.steps_per_epoch() * batch);
      for (auto i : shard) {
        EXPECT_TRUE(i >= 0 && i < size);
        EXPECT_TRUE(seen.insert(i).second) << "index " << i << " in two shards, world " << world;
      }
    }
    // Covered: exactly the first steps·N·B items of the permutation.
    const auto perm = s.permutation(0);
    std::set<std::int64_t> head(perm.begin(), perm.begin() + s.steps_per_epoch() * world * batch);
    EXPECT_EQ(seen, head) << "world " << world;
  }
}

TEST(ShardedSampler, PermutationIsAPermutation) {
  ShardedSampler s = make(500, 2, 10);
  auto p = s.permutation(3);
  std::sort(p.begin(), p.end());
  for (std::int64_t i = 0; i < 500; ++i) EXPECT_EQ(p[i], i);
}

TEST(ShardedSampler, SamePermutationOnEveryRankAndDeterministic) {
  // Separate objects stand for separate processes.
  ShardedSampler a = make(1000, 4, 16), b = make(1000, 4, 16), c = make(1000, 2, 8);
  EXPECT_EQ(a.permutation(2), b.permutation(2));
  EXPECT_EQ(a.permutation(2), c.permutation(2));  // depends on (seed, epoch) only
  EXPECT_EQ(a.indices(2, 5, 3), b.indices(2, 5, 3));
}

TEST(ShardedSampler, DifferentAcrossEpochsAndSeeds) {
  ShardedSampler a = make(1000, 4, 16, 7), b = make(1000, 4, 16, 8);
  EXPECT_NE(a.permutation(0), a.permutation(1));
  EXPECT_NE(a.permutation(0), b.permutation(0));
  // seed 7 epoch 1 must not equal seed 8 epoch 0 (a plain seed + epoch would).
  EXPECT_NE(a.permutation(1), b.permutation(0));
}

TEST(ShardedSampler, GlobalBatchIsConcatenationInRankOrder) {
  ShardedSampler s = make(777, 3, 11);
  for (std::int64_t step : {0, 5, 22}) {
    std::vector<std::int64_t> cat;
    for (int r = 0; r < 3; ++r) {
      auto part = s.indices(1, step, r);
      EXPECT_EQ(part.size(), 11u);
      cat.insert(cat.end(), part.begin(), part.end());
    }
    EXPECT_EQ(cat, s.global_indices(1, step));
  }
}

TEST(ShardedSampler, NoShuffleIsIdentity) {
  ShardedSamplerOptions o;
  o.dataset_size = 20;
  o.world_size = 2;
  o.batch_size = 3;
  o.shuffle = false;
  ShardedSampler s(o);
  EXPECT_EQ(s.indices(4, 1, 1), (std::vector<std::int64_t>{9, 10, 11}));
}

TEST(ShardedSampler, RejectsBadOptionsAndSteps) {
  EXPECT_THROW(make(10, 4, 3), InvalidArgument);  // 12 > 10: no full global batch
  EXPECT_THROW(make(10, 0, 3), InvalidArgument);
  EXPECT_THROW(make(10, 1, 0), InvalidArgument);
  ShardedSampler s = make(100, 2, 10);
  EXPECT_THROW(s.indices(0, 5, 0), InvalidArgument);
  EXPECT_THROW(s.indices(0, 0, 2), InvalidArgument);
  EXPECT_THROW(s.indices(-1, 0, 0), InvalidArgument);
}

TEST(DataLoader, BatchesMatchSamplerAndGlobalBatchConcatenates) {
  SyntheticOptions so;
  so.size = 100;
  Dataset data = make_synthetic_dataset(so);
  DataLoaderOptions o;
  o.batch_size = 8;
  o.world_size = 3;
  o.seed = 5;
  std::vector<Batch> parts;
  for (int r = 0; r < 3; ++r) {
    o.rank = r;
    DataLoader loader(data, o);
    EXPECT_EQ(loader.steps_per_epoch(), 4);
    Batch b = loader.batch(1, 2);
    EXPECT_EQ(b.size(), 8);
    auto idx = loader.sampler().indices(1, 2, r);
    for (int k = 0; k < 8; ++k) {
      EXPECT_TRUE(b.images[k].equal(data.images[idx[k]]));
      EXPECT_EQ(b.labels[k].item<std::int64_t>(), data.labels[idx[k]].item<std::int64_t>());
    }
    parts.push_back(b);
  }
  DataLoader loader(data, o);
  Batch global = loader.global_batch(1, 2);
  ASSERT_EQ(global.size(), 24);
  for (int r = 0; r < 3; ++r) {
    EXPECT_TRUE(global.images.narrow(0, r * 8, 8).equal(parts[r].images));
    EXPECT_TRUE(global.labels.narrow(0, r * 8, 8).equal(parts[r].labels));
  }
}

}  // namespace
}  // namespace ferry::train
