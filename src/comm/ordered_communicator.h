// Collectives in a fixed reduction order over any Communicator (`ferry train --deterministic`).
// Point-to-point traffic goes straight to the inner communicator; allreduce, broadcast, allgather
// and barrier run the ring / tree algorithms of p2p_collectives.h, whose sums add the same
// values in the same order on every run of a given world size. A native MPI_Allreduce makes no
// such promise (its algorithm may depend on message size, timing or the MPI build).
#pragma once

#include "comm/communicator.h"
#include "comm/p2p_collectives.h"

namespace ferry::comm {

class OrderedCollectivesCommunicator final : public P2pCollectivesCommunicator {
 public:
  // `inner` must outlive this decorator (the caller owns both side by side).
  explicit OrderedCollectivesCommunicator(Communicator* inner) : inner_(inner) {}

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  void send(int dst, int tag, std::span<const std::byte> data) override { inner_->send(dst, tag, data); }
  Message recv(int src, int tag) override { return inner_->recv(src, tag); }
  Ticket isend(int dst, int tag, std::vector<std::byte> data) override {
    return inner_->isend(dst, tag, std::move(data));
  }
  Ticket irecv(int src, int tag, std::span<std::byte> out) override { return inner_->irecv(src, tag, out); }
  CommCounters counters() const override { return inner_->counters(); }

 private:
  Communicator* inner_;  // see constructor
};

}  // namespace ferry::comm
