// A worker's stall watchdog (`ferry train --stall-timeout S`): a dead rank is noticed by the MPI
// runtime, but a rank that is alive and stuck (a deadlock, a stopped process, a lost message)
// would leave every other rank blocked in a collective, a pull or a server loop forever. The
// training loop reports progress after every iteration; when none comes for S seconds the
// watchdog calls `on_stall` with a message naming the iteration it is stuck in
// (the CLI aborts the whole job there). Servers need no watchdog of their own: a stuck server
// stalls the workers, whose watchdogs fire.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace ferry::train {

class StallWatchdog {
 public:
  // timeout_s <= 0: disabled (no thread).
  StallWatchdog(double timeout_s, std::function<void(const std::string&)> on_stall)
      : timeout_(std::chrono::duration<double>(timeout_s)), on_stall_(std::move(on_stall)) {
    if (timeout_s > 0 && on_stall_) thread_ = std::thread([this] { loop(); });
  }
  ~StallWatchdog() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_one();
    if (thread_.joinable()) thread_.join();
  }
  StallWatchdog(const StallWatchdog&) = delete;
  StallWatchdog& operator=(const StallWatchdog&) = delete;

  // The loop is now at `iteration` (called at least once per iteration, and around long pauses).
  void progress(std::int64_t iteration) {
    std::lock_guard lock(mu_);
    iteration_ = iteration;
    last_ = std::chrono::steady_clock::now();
  }

 private:
  void loop() {
    std::unique_lock lock(mu_);
    while (!stopping_) {
      const auto deadline = last_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(timeout_);
      if (std::chrono::steady_clock::now() >= deadline) {
        const std::string why = "no progress for " +
                                std::to_string(static_cast<long long>(timeout_.count())) + " s in iteration " +
                                std::to_string(iteration_) +
                                " (blocked on communication: another rank is stuck or unreachable; --stall-timeout)";
        lock.unlock();
        on_stall_(why);  // normally does not return
        return;
      }
      cv_.wait_until(lock, deadline, [this] { return stopping_; });
    }
  }

  std::chrono::duration<double> timeout_;
  std::function<void(const std::string&)> on_stall_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::int64_t iteration_ = 0;
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
  std::thread thread_;  // last: started after the members it reads
};

}  // namespace ferry::train
