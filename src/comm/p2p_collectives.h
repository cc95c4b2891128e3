// Collectives written over point-to-point messages, for backends without native collectives
// (threads-as-ranks) and for link emulation, where every byte must cross the emulated NICs.
// Algorithms as in gloo / Baidu's ring allreduce: reduce-scatter then allgather around a ring,
// so each rank sends 2·(N−1)/N of the buffer, the bandwidth-optimal amount.
#pragma once

#include <span>
#include <vector>

#include "comm/communicator.h"

namespace ferry::comm {

template <typename T>
void ring_allreduce_sum(Communicator& comm, std::span<T> data);
void tree_broadcast(Communicator& comm, std::span<std::byte> data, int root);
std::vector<std::vector<std::byte>> ring_allgather(Communicator& comm, std::span<const std::byte> mine);
void dissemination_barrier(Communicator& comm);

extern template void ring_allreduce_sum<float>(Communicator&, std::span<float>);
extern template void ring_allreduce_sum<double>(Communicator&, std::span<double>);

// Base of backends whose collectives are the point-to-point algorithms above.
class P2pCollectivesCommunicator : public Communicator {
 public:
  void allreduce_sum(std::span<float> data) override { ring_allreduce_sum(*this, data); }
  void allreduce_sum(std::span<double> data) override { ring_allreduce_sum(*this, data); }
  void broadcast(std::span<std::byte> data, int root) override { tree_broadcast(*this, data, root); }
  std::vector<std::vector<std::byte>> allgather(std::span<const std::byte> mine) override {
    return ring_allgather(*this, mine);
  }
  void barrier() override { dissemination_barrier(*this); }
};

}  // namespace ferry::comm
