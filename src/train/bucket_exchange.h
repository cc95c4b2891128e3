// The codec exchange of one bucket of gradient tensors: what every worker sends, over which
// collective, and how the sum is rebuilt. Written once, for `ferry train`'s allreduce codecs
// (gradient_codecs.h, over a comm::Communicator) and for the DDP communication hook
// (bucket_averager.h, over torch.distributed's process group or ferry's workers, through the
// Python package's callbacks):
//
//   for each tensor t, in order:
//     codec(t).custom_allreduce(grad_t, allreduce_sum)   (PowerSGD: allreduce P, then Q), or else
//     payload_t = codec(t).encode(grad_t)                (error feedback updates the residual)
//   message = the payloads as length-prefixed records    (compress/payload_records.h)
//   for every worker r (in rank order): for every allgathered tensor t:
//     sum_t += codec(t).decode(record t of allgather(message)[r])   (sum_t zeroed first)
//
// The result is the SUM over workers of the decoded gradients; the caller averages.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "compress/codec.h"

namespace ferry::train {

class WorkerMomentum;  // train/worker_momentum.h

// The two collectives an exchange needs, among `world_size` workers.
struct BucketCollectives {
  std::size_t world_size = 1;
  // Sums a float buffer element-wise over the workers, in place.
  compress::AllreduceSumFn allreduce_sum;
  // Every worker's bytes (of any size), in rank order.
  std::function<std::vector<std::vector<std::byte>>(std::span<const std::byte>)> allgather;
  // Names worker r's message in errors, as "<message_name> r".
  std::string message_name = "allgathered gradients of rank";
};

// The collectives of `comm`, which must outlive the result (its callbacks call it).
BucketCollectives collectives_of(comm::Communicator& comm);

// One tensor of a bucket.
struct BucketTensor {
  compress::Codec* codec = nullptr;  // its codec (its state), owned by the caller for the exchange
  std::span<float> grad;             // this worker's gradient on entry, the sum on return
  std::size_t offset = 0;            // where grad starts in the flat gradient of `momentum`
};

// Holds the buffers reused from one exchange to the next; one exchange at a time.
class BucketExchange {
 public:
  // Collective: every worker calls it with the same codecs, tensor sizes and order. With
  // `momentum` (worker_momentum.h), each tensor's sent coordinates are masked in the worker's
  // velocity. FormatError naming the worker (message_name) for a message that does not hold
  // one well-formed record per allgathered tensor.
  void sum(const BucketCollectives& net, std::span<const BucketTensor> tensors, WorkerMomentum* momentum = nullptr);

 private:
  std::vector<std::byte> packed_;   // this worker's payloads, length-prefixed
  std::vector<std::byte> payload_;  // one tensor's payload
};

}  // namespace ferry::train
