// A bounded multi-producer multi-consumer queue with close(): the work channel between threads.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>

#include "core/error.h"

namespace ferry {

template <typename T>
class BoundedQueue {
 public:
  // capacity: the most items held at once; push() blocks when full.
  explicit BoundedQueue(std::size_t capacity) : capacity_(capacity) {
    FERRY_CHECK(capacity > 0, "queue capacity must be greater than 0");
  }

  // Blocks while full. Returns false (and drops the item) if the queue is closed.
  bool push(T item) {
    std::unique_lock lock(mu_);
    not_full_.wait(lock, [&] { return closed_ || items_.size() < capacity_; });
    if (closed_) return false;
    items_.push_back(std::move(item));
    not_empty_.notify_one();
    return true;
  }

  // Blocks while empty. Returns nullopt once the queue is closed and drained.
  std::optional<T> pop() {
    std::unique_lock lock(mu_);
    not_empty_.wait(lock, [&] { return closed_ || !items_.empty(); });
    return take_locked();
  }

  // Like pop() but gives up after `timeout_s`; nullopt on timeout or closed-and-drained.
  std::optional<T> pop_for(double timeout_s) {
    std::unique_lock lock(mu_);
    not_empty_.wait_for(lock, std::chrono::duration<double>(timeout_s),
                        [&] { return closed_ || !items_.empty(); });
    return take_locked();
  }

  // Wakes every waiter; later pushes fail, pops drain what is left.
  void close() {
    std::lock_guard lock(mu_);
    closed_ = true;
    not_empty_.notify_all();
    not_full_.notify_all();
  }

  bool closed() const {
    std::lock_guard lock(mu_);
    return closed_;
  }

  std::size_t size() const {
    std::lock_guard lock(mu_);
    return items_.size();
  }

 private:
  std::optional<T> take_locked() {
    if (items_.empty()) return std::nullopt;
    T item = std::move(items_.front());
    items_.pop_front();
    not_full_.notify_one();
    return item;
  }

  const std::size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable not_empty_;
  std::condition_variable not_full_;
  std::deque<T> items_;
  bool closed_ = false;
};

}  // namespace ferry
