#include "comm/ticket.h"

namespace ferry::comm {
namespace {

struct FutureState : Ticket::State {
  explicit FutureState(std::future<void> f) : future(std::move(f)) {}
  void wait() override { future.get(); }
  bool test() override { return future.wait_for(std::chrono::seconds(0)) == std::future_status::ready; }
  std::future<void> future;
};

}  // namespace

Ticket::Ticket(std::future<void> future) : state_(std::make_unique<FutureState>(std::move(future))) {}

Ticket& Ticket::operator=(Ticket&& other) noexcept {
  if (this != &other) {
    try {
      wait();
    } catch (...) {
    }
    state_ = std::move(other.state_);
  }
  return *this;
}

Ticket::~Ticket() {
  try {
    wait();
  } catch (...) {
  }
}

void Ticket::wait() {
  if (!state_) return;
  auto state = std::move(state_);  // completed (or failed) exactly once
  state->wait();
}

bool Ticket::done() { return !state_ || state_->test(); }

}  // namespace ferry::comm

namespace ferry::comm {
Ticket when_all(std::vector<Ticket> tickets) {
  struct AllState : Ticket::State {
    std::vector<Ticket> tickets;
    void wait() override {
      for (auto& t : tickets) t.wait();
    }
    bool test() override {
      for (auto& t : tickets)
        if (!t.done()) return false;
      return true;
    }
  };
  auto s = std::make_unique<AllState>();
  s->tickets = std::move(tickets);
  return Ticket(std::move(s));
}
}  // namespace ferry::comm
