// Threads as ranks: a LocalWorld holds one mailbox per rank; each LocalCommunicator is one rank's
// view. Used by tests (world sizes 1..N in one process) and by single-process runs.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "comm/communicator.h"
#include "comm/p2p_collectives.h"

namespace ferry::comm {

class LocalCommunicator;

class LocalWorld {
 public:
  explicit LocalWorld(int size);
  ~LocalWorld();
  int size() const { return static_cast<int>(mailboxes_.size()); }
  // Rank r's communicator; owned by the world, valid while it lives.
  LocalCommunicator& communicator(int rank);

 private:
  friend class LocalCommunicator;
  struct Mailbox {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<Message> messages;
  };
  std::vector<std::unique_ptr<Mailbox>> mailboxes_;
  std::vector<std::unique_ptr<LocalCommunicator>> comms_;
};

class LocalCommunicator final : public P2pCollectivesCommunicator {
 public:
  LocalCommunicator(LocalWorld* world, int rank) : world_(world), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return world_->size(); }
  void send(int dst, int tag, std::span<const std::byte> data) override;
  Message recv(int src, int tag) override;
  Ticket isend(int dst, int tag, std::vector<std::byte> data) override;
  Ticket irecv(int src, int tag, std::span<std::byte> out) override;
  CommCounters counters() const override;

 private:
  void deliver(int dst, int tag, std::vector<std::byte> data);

  LocalWorld* world_;  // owns this communicator, so outlives it
  int rank_;
  mutable std::mutex counters_mu_;
  CommCounters counters_;
};

// Runs fn(comm) on `size` threads, one per rank, and re-throws the first exception at join.
void run_local_ranks(int size, const std::function<void(Communicator&)>& fn);

}  // namespace ferry::comm
