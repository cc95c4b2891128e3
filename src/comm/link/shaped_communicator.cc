#include "comm/link/shaped_communicator.h"

#include <algorithm>
#include <cstring>
#include <future>
#include <thread>

#include "comm/p2p_collectives.h"
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

ShapedCommunicator::ShapedCommunicator(Communicator* inner, LinkOptions link) : inner_(inner), link_(link), nic_(link) {
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
  const double now = now_s();
  const double egress_end = dst != rank() ? nic_.depart(now, payload) : now;  // loopback skips the NIC
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
  m.data.erase(m.data.begin(), m.data.begin() + static_cast<std::ptrdiff_t>(deliver(m.src, m.data)));
  return m;
}

std::size_t ShapedCommunicator::deliver(int src, std::span<const std::byte> framed) {
  if (framed.size() < kHeaderBytes)
    FERRY_THROW(FormatError, "emulated-link message from rank ", src, " lacks its header");
  double egress_end;
  std::memcpy(&egress_end, framed.data(), kHeaderBytes);
  const std::size_t payload = framed.size() - kHeaderBytes;
  double delivered;
  {
    std::lock_guard lock(mu_);
    delivered = src != rank() ? nic_.arrive(egress_end, payload) : egress_end;
    counters_.bytes_recv += payload;
    counters_.messages_recv += 1;
  }
  sleep_until_s(delivered);
  return kHeaderBytes;
}

// The inner receive is posted now, not when the ticket is waited for: a large message is sent
// by the sender's lane thread with a send that completes only once a matching receive exists,
// and the lane sends in order, so a receiver waiting for a later message of the same sender
// before an earlier one would otherwise wait forever (wfbp on the parameter server waits for
// its front-layer pulls first).
Ticket ShapedCommunicator::irecv(int src, int tag, std::span<std::byte> out) {
  struct State : Ticket::State {
    ShapedCommunicator* self;
    int src;
    std::vector<std::byte> framed;
    std::span<std::byte> out;
    Ticket inner;
    bool finished = false;
    void wait() override {
      if (finished) return;
      inner.wait();
      self->deliver(src, framed);
      if (!out.empty()) std::memcpy(out.data(), framed.data() + kHeaderBytes, out.size());
      finished = true;
    }
    bool test() override { return finished; }
  };
  auto s = std::make_unique<State>();
  s->self = this;
  s->src = src;
  s->framed.resize(kHeaderBytes + out.size());
  s->out = out;
  s->inner = inner_->irecv(src, tag, s->framed);
  return Ticket(std::move(s));
}

CommCounters ShapedCommunicator::counters() const {
  std::lock_guard lock(mu_);
  return counters_;
}

}  // namespace ferry::comm
