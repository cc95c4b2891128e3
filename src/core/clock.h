// Monotonic clocks and a stopwatch. All times in seconds as double unless a name says otherwise.
#pragma once

#include <chrono>
#include <thread>

namespace ferry {

using SteadyClock = std::chrono::steady_clock;
using TimePoint = SteadyClock::time_point;

// Seconds on the machine-wide monotonic clock (CLOCK_MONOTONIC: comparable across processes).
inline double now_s() {
  return std::chrono::duration<double>(SteadyClock::now().time_since_epoch()).count();
}

// Sleeps until the monotonic clock reads `deadline_s` (returns at once if already past).
inline void sleep_until_s(double deadline_s) {
  double left = deadline_s - now_s();
  if (left > 0) std::this_thread::sleep_for(std::chrono::duration<double>(left));
}

// Measures elapsed time since construction or the last reset().
class Stopwatch {
 public:
  Stopwatch() : start_(now_s()) {}
  void reset() { start_ = now_s(); }
  double elapsed_s() const { return now_s() - start_; }

 private:
  double start_;
};

// Adds the time spent in its scope to a counter (e.g. time blocked on communication).
class ScopedTimer {
 public:
  explicit ScopedTimer(double* total_s) : total_s_(total_s), start_(now_s()) {}
  ~ScopedTimer() { *total_s_ += now_s() - start_; }
  ScopedTimer(const ScopedTimer&) = delete;
  ScopedTimer& operator=(const ScopedTimer&) = delete;

 private:
  double* total_s_;  // owned by the caller, outlives this scope
  double start_;
};

}  // namespace ferry
