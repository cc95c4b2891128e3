// The average over the workers of gradient buckets whose grouping may change from one step to
// the next, as DistributedDataParallel's do (DDP rebuilds its buckets after the first iteration):
// the DDP communication hook's C++ half (python/ferry/torch/hooks.py). Each bucket goes through
// the exchange `ferry train` uses (bucket_exchange.h) with one codec per parameter, so that a
// codec's state (error feedback, PowerSGD's Q) follows its parameter whatever bucket holds it.
// A parameter's codec is made the first time the parameter is seen, with the next tensor id
// (the seed of state shared by the workers): the ids agree on every worker, since every worker
// sees the buckets in the same order. The sum is divided by the number of workers, as DDP's
// allreduce averages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "compress/codec.h"
#include "train/bucket_exchange.h"

namespace ferry::train {

class BucketAverager {
 public:
  // Any codec spec (the identity's too, though its fp32 buckets are better allreduced as they are).
  explicit BucketAverager(std::string codec_spec);

  // The codec of the parameter `key` (a value naming one parameter while this object lives) of
  // shape `shape`, on worker `rank`; made at the first call for `key`. The codec stays valid as
  // long as this object. May run while average() runs on another thread (DDP hands the next
  // bucket over while the last one is exchanged): it touches no codec in use.
  compress::Codec* codec_of(std::uintptr_t key, const std::vector<std::int64_t>& shape, int rank);

  // `flat` holds this worker's gradients of the tensors of `codecs`, back to back, on entry, and
  // their average over the workers on return. Collective; one call at a time.
  void average(const BucketCollectives& net, std::span<compress::Codec* const> codecs, std::span<float> flat);

 private:
  std::string spec_;
  std::unordered_map<std::uintptr_t, std::unique_ptr<compress::Codec>> codecs_;  // by parameter key
  std::vector<BucketTensor> bucket_;  // the tensors of one exchange, reused
  BucketExchange exchange_;
};

}  // namespace ferry::train
