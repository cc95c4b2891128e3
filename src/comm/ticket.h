// Tickets: the handle every non-blocking operation returns (ps-lite style). wait() completes the
// operation and re-throws an error that happened in the background.
#pragma once

#include <future>
#include <memory>
#include <vector>

namespace ferry::comm {

class Ticket {
 public:
  // What a backend puts behind a ticket.
  struct State {
    virtual ~State() = default;
    virtual void wait() = 0;  // blocks until done; throws the operation's error
    virtual bool test() = 0;  // true when done (never blocks)
  };

  Ticket() = default;  // an already completed operation
  explicit Ticket(std::unique_ptr<State> state) : state_(std::move(state)) {}
  // A ticket completed by whoever fulfils the promise behind `future`.
  explicit Ticket(std::future<void> future);
  Ticket(Ticket&&) noexcept = default;
  Ticket& operator=(Ticket&& other) noexcept;
  Ticket(const Ticket&) = delete;
  Ticket& operator=(const Ticket&) = delete;
  // An unwaited ticket is waited for here (errors are swallowed: call wait() to see them).
  ~Ticket();

  // Completes the operation; idempotent.
  void wait();
  // True when the operation has completed.
  bool done();

 private:
  std::unique_ptr<State> state_;
};

}  // namespace ferry::comm

namespace ferry::comm {
// One ticket that completes when all of `tickets` have (waited in order).
Ticket when_all(std::vector<Ticket> tickets);
}  // namespace ferry::comm
