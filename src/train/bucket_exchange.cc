#include "train/bucket_exchange.h"

#include <algorithm>

#include "compress/payload_records.h"
#include "train/worker_momentum.h"

namespace ferry::train {

BucketCollectives collectives_of(comm::Communicator& comm) {
  BucketCollectives net;
  net.world_size = static_cast<std::size_t>(comm.size());
  net.allreduce_sum = [&comm](std::span<float> x) { comm.allreduce_sum(x); };
  net.allgather = [&comm](std::span<const std::byte> mine) { return comm.allgather(mine); };
  return net;
}

void BucketExchange::sum(const BucketCollectives& net, std::span<const BucketTensor> tensors,
                         WorkerMomentum* momentum) {
  packed_.clear();
  std::vector<const BucketTensor*> gathered;  // tensors aggregated by allgather, in order
  for (const BucketTensor& t : tensors) {
    if (t.codec->custom_allreduce(t.grad, net.allreduce_sum, net.world_size)) continue;
    t.codec->encode(t.grad, payload_);
    if (momentum) momentum->mask(t.offset, t.grad.size(), payload_);
    compress::append_record(packed_, payload_);
    gathered.push_back(&t);
  }
  if (gathered.empty()) return;
  const auto all = net.allgather(packed_);
  for (const BucketTensor* t : gathered) std::ranges::fill(t->grad, 0.0f);
  for (std::size_t r = 0; r < all.size(); ++r) {
    const auto records =
        compress::unpack_records(all[r], gathered.size(), net.message_name + " " + std::to_string(r));
    for (std::size_t i = 0; i < gathered.size(); ++i) gathered[i]->codec->decode_add(records[i], gathered[i]->grad);
  }
}

}  // namespace ferry::train
