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
