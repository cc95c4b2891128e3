#include "comm/local/local_communicator.h"

#include <exception>
#include <thread>

#include "comm/p2p_collectives.h"
#include "comm/recv_into.h"
#include "core/error.h"

namespace ferry::comm {

LocalWorld::LocalWorld(int size) {
  FERRY_REQUIRE_GE(size, 1, "world size");
  for (int r = 0; r < size; ++r) {
    mailboxes_.push_back(std::make_unique<Mailbox>());
    comms_.push_back(std::make_unique<LocalCommunicator>(this, r));
  }
}

LocalWorld::~LocalWorld() = default;

LocalCommunicator& LocalWorld::communicator(int rank) {
  FERRY_CHECK(rank >= 0 && rank < size(), "rank ", rank);
  return *comms_[rank];
}

void LocalCommunicator::deliver(int dst, int tag, std::vector<std::byte> data) {
  FERRY_CHECK(dst >= 0 && dst < size(), "send to rank ", dst, " in a world of ", size());
  {
    std::lock_guard lock(counters_mu_);
    counters_.bytes_sent += data.size();
    counters_.messages_sent += 1;
  }
  auto& box = *world_->mailboxes_[dst];
  {
    std::lock_guard lock(box.mu);
    box.messages.push_back(Message{rank_, tag, std::move(data)});
  }
  box.cv.notify_all();
}

void LocalCommunicator::send(int dst, int tag, std::span<const std::byte> data) {
  deliver(dst, tag, std::vector<std::byte>(data.begin(), data.end()));
}

Ticket LocalCommunicator::isend(int dst, int tag, std::vector<std::byte> data) {
  deliver(dst, tag, std::move(data));  // mailboxes are unbounded: a send completes at once
  return Ticket();
}

Message LocalCommunicator::recv(int src, int tag) {
  auto& box = *world_->mailboxes_[rank_];
  std::unique_lock lock(box.mu);
  for (;;) {
    for (auto it = box.messages.begin(); it != box.messages.end(); ++it) {
      if (it->tag == tag && (src == kAnySource || it->src == src)) {
        Message m = std::move(*it);
        box.messages.erase(it);
        lock.unlock();
        std::lock_guard clock(counters_mu_);
        counters_.bytes_recv += m.data.size();
        counters_.messages_recv += 1;
        return m;
      }
    }
    box.cv.wait(lock);
  }
}

Ticket LocalCommunicator::irecv(int src, int tag, std::span<std::byte> out) {
  return deferred_recv_into(*this, src, tag, out);
}


CommCounters LocalCommunicator::counters() const {
  std::lock_guard lock(counters_mu_);
  return counters_;
}

void run_local_ranks(int size, const std::function<void(Communicator&)>& fn) {
  LocalWorld world(size);
  std::vector<std::exception_ptr> errors(size);
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      try {
        fn(world.communicator(r));
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace ferry::comm
