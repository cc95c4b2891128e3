// Splitting a loop over [0, n) into contiguous chunks run on their own threads, joined before
// returning (no pool: for loops long enough that starting a few threads does not matter, such as
// quantizing or filling a tensor of a model file).
#pragma once

#include <algorithm>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ferry {

// Runs fn(begin, end) over [0, n) in min(threads, n) contiguous chunks (threads <= 1: on the
// calling thread); the first exception is re-thrown after every thread has joined.
inline void parallel_chunks(std::size_t n, int threads, const std::function<void(std::size_t, std::size_t)>& fn) {
  const std::size_t t =
      std::max<std::size_t>(1, std::min<std::size_t>(static_cast<std::size_t>(std::max(threads, 1)), n));
  if (t == 1) return fn(0, n);
  std::vector<std::thread> pool;
  std::exception_ptr error;
  std::mutex mutex;
  for (std::size_t k = 0; k < t; ++k)
    pool.emplace_back([&, k] {
      try {
        fn(n * k / t, n * (k + 1) / t);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!error) error = std::current_exception();
      }
    });
  for (auto& th : pool) th.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace ferry
