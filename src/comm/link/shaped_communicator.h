// Link emulation as a decorator over any Communicator. Real bytes still go through the inner
// transport; each message is paced so that it leaves no earlier than the sender's NIC could
// have put it on the wire, and is delivered no earlier than the receiver's NIC could have
// taken it in. N workers pushing to one server therefore share the server's ingress (incast),
// as behind a real switch. The arithmetic is NicClock's (nic_clock.h).
//
// The sender's egress_end travels in an 8-byte header (monotonic clock, valid on one machine).
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "comm/communicator.h"
#include "comm/p2p_collectives.h"
#include "comm/link/link_options.h"
#include "comm/link/nic_clock.h"

namespace ferry::comm {

class ShapedCommunicator final : public P2pCollectivesCommunicator {
 public:
  // `inner` must outlive this decorator (it is usually owned next to it by the caller).
  ShapedCommunicator(Communicator* inner, LinkOptions link);
  ~ShapedCommunicator() override;

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  void send(int dst, int tag, std::span<const std::byte> data) override;
  Message recv(int src, int tag) override;
  Ticket isend(int dst, int tag, std::vector<std::byte> data) override;
  Ticket irecv(int src, int tag, std::span<std::byte> out) override;
  CommCounters counters() const override;

  const LinkOptions& link() const { return link_; }

 private:
  class Lane;  // one sender thread per destination keeps per-pair order and avoids head-of-line blocking
  Lane& lane(int dst);
  // Paces a received framed message from `src` until the receiver's NIC could have taken it
  // in (updates the ingress clock and counters); returns the header size to strip.
  std::size_t deliver(int src, std::span<const std::byte> framed);

  Communicator* inner_;  // see constructor
  LinkOptions link_;
  mutable std::mutex mu_;  // guards the NIC clocks, counters and lanes
  NicClock nic_;
  CommCounters counters_;
  std::vector<std::unique_ptr<Lane>> lanes_;
};

}  // namespace ferry::comm
