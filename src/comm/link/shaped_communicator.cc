#include "comm/link/shaped_communicator.h"

#include <algorithm>
#include <cstring>
#include <future>
#include <thread>

#include "comm/p2p_collectives.h"
#include "comm/recv_into.h"
#include "core/bounded_queue.h"
#include "core/clock.h"
#include "core/error.h"

namespace ferry::comm {
namespace {
constexpr std::size_t kHeaderBytes = sizeof(double);
}

class ShapedCommunicator::Lane {
 public:
  Lane(Communicator* inner, int dst) : inner_(inner), dst_(dst), thread_([this] { loop(); }) {}
  ~Lane() {
    queue_.close();
    thread_.join();
  }
  std::future<void> enqueue(int tag, double release_s, std::vector<std::byte> framed) {
    Item item{tag, release_s, std::move(framed), {}};
    auto future = item.done.get_future();
    if (!queue_.push(std::move(item))) FERRY_THROW(InternalError, "send on a closed link lane");
    return future;
  }

 private:
  struct Item {
    int tag;
    double release_s;
    std::vector<std::byte> framed;
    std::promise<void> done;
  };
  void loop() {
    while (auto item = queue_.pop()) {
      try {
        sleep_until_s(item->release_s);
        inner_->send(dst_, item->tag, item->framed);
        item->done.set_value();
      } catch (...) {
        item->done.set_exception(std::current_exception());
      }
    }
  }
  Communicator* inner_;  // the decorator's inner communicator outlives its lanes
  int dst_;
  BoundedQueue<Item> queue_{1 << 16};
  std::thread thread_;
};

ShapedCommunicator::ShapedCommunicator(Communicator* inner, LinkOptions link) : inner_(inner), link_(link) {
  FERRY_CHECK(inner_ != nullptr);
  FERRY_REQUIRE(link_.enabled(), "link emulation needs a positive bandwidth");
  lanes_.resize(inner_->size());
}

ShapedCommunicator::~ShapedCommunicator() = default;

ShapedCommunicator::Lane& ShapedCommunicator::lane(int dst) {
  // Caller holds mu_.
  if (!lanes_[dst]) lanes_[dst] = std::make_unique<Lane>(inner_, dst);
  return *lanes_[dst];
}

Ticket ShapedCommunicator::isend(int dst, int tag, std::vector<std::byte> data) {
  FERRY_CHECK(dst >= 0 && dst < size(), "send to rank ", dst);
  std::lock_guard lock(mu_);
  const std::size_t payload = data.size();
  double egress_end = now_s();
  if (dst != rank()) {  // loopback does not cross the NIC
    double start = std::max(egress_end, egress_free_s_);
    egress_end = start + payload / link_.bandwidth_bytes_per_s;
    egress_free_s_ = egress_end;
  }
  std::vector<std::byte> framed(kHeaderBytes + payload);
  std::memcpy(framed.data(), &egress_end, kHeaderBytes);
  if (payload) std::memcpy(framed.data() + kHeaderBytes, data.data(), payload);
  counters_.bytes_sent += payload;
  counters_.messages_sent += 1;
  return Ticket(lane(dst).enqueue(tag, egress_end, std::move(framed)));
}

void ShapedCommunicator::send(int dst, int tag, std::span<const std::byte> data) {
  isend(dst, tag, std::vector<std::byte>(data.begin(), data.end())).wait();
}

Message ShapedCommunicator::recv(int src, int tag) {
  Message m = inner_->recv(src, tag);
  if (m.data.size() < kHeaderBytes)
    FERRY_THROW(FormatError, "emulated-link message from rank ", m.src, " lacks its header");
  double egress_end;
  std::memcpy(&egress_end, m.data.data(), kHeaderBytes);
  m.data.erase(m.data.begin(), m.data.begin() + kHeaderBytes);
  double delivered;
  {
    std::lock_guard lock(mu_);
    delivered = egress_end;
    if (m.src != rank()) {
      delivered = std::max(egress_end + link_.latency_s,
                           ingress_free_s_ + m.data.size() / link_.bandwidth_bytes_per_s);
      ingress_free_s_ = delivered;
    }
    counters_.bytes_recv += m.data.size();
    counters_.messages_recv += 1;
  }
  sleep_until_s(delivered);
  return m;
}

Ticket ShapedCommunicator::irecv(int src, int tag, std::span<std::byte> out) {
  return deferred_recv_into(*this, src, tag, out);
}


CommCounters ShapedCommunicator::counters() const {
  std::lock_guard lock(mu_);
  return counters_;
}

}  // namespace ferry::comm
