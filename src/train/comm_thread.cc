#include "train/comm_thread.h"

#include "core/error.h"

namespace ferry::train {

CommThread::~CommThread() { stop(); }

void CommThread::start() {
  std::lock_guard lock(mu_);
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] { loop(); });
}

comm::Ticket CommThread::submit(std::function<void()> task) {
  std::packaged_task<void()> job(std::move(task));
  std::future<void> done = job.get_future();
  {
    std::lock_guard lock(mu_);
    FERRY_CHECK(thread_.joinable() && !stopping_, "CommThread::submit before start() or after stop()");
    queue_.push_back(std::move(job));
  }
  cv_.notify_one();
  return comm::Ticket(std::move(done));
}

void CommThread::stop() {
  {
    std::lock_guard lock(mu_);
    if (!thread_.joinable()) return;
    stopping_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

void CommThread::loop() {
  for (;;) {
    std::packaged_task<void()> job;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    job();  // a packaged_task stores the task's exception in its future
  }
}

}  // namespace ferry::train
