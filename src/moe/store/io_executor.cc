#include "moe/store/io_executor.h"

#include <algorithm>

#include "core/clock.h"
#include "core/error.h"

namespace ferry::moe {

bool IoTicket::wait() const {
  FERRY_CHECK(job_ != nullptr, "wait on an empty ticket");
  std::unique_lock lock(exec_->mu_);
  exec_->done_cv_.wait(lock, [&] { return job_->state == IoState::kDone || job_->state == IoState::kCancelled; });
  if (job_->error) std::rethrow_exception(job_->error);
  return job_->state == IoState::kDone;
}

bool IoTicket::ready() const {
  std::lock_guard lock(exec_->mu_);
  return job_->state == IoState::kDone || job_->state == IoState::kCancelled;
}

IoExecutor::IoExecutor(Link* link) : link_(link) { FERRY_CHECK(link_ != nullptr); }

IoExecutor::~IoExecutor() { stop(); }

void IoExecutor::start() {
  std::lock_guard lock(mu_);
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] { run(); });
}

void IoExecutor::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    for (auto& job : queue_) job->state = IoState::kCancelled;
    queue_.clear();
    work_cv_.notify_all();
    done_cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

IoTicket IoExecutor::submit(ExpertId id, std::byte* dst, int priority, std::uint64_t bytes) {
  auto job = std::make_shared<IoJob>();
  job->id = id;
  job->dst = dst;
  job->priority = priority;
  job->bytes = bytes;
  job->submitted_s = now_s();
  {
    std::lock_guard lock(mu_);
    FERRY_CHECK(!stopping_, "submit after stop");
    job->seq = next_seq_++;
    queue_.push_back(job);
    preempt_for(priority);
  }
  work_cv_.notify_one();
  return IoTicket(job, this);
}

void IoExecutor::cancel(const IoTicket& ticket) {
  if (!ticket.valid()) return;
  std::unique_lock lock(mu_);
  auto& job = ticket.job();
  if (job->state == IoState::kQueued) {
    queue_.erase(std::remove(queue_.begin(), queue_.end(), job), queue_.end());
    job->state = IoState::kCancelled;
    done_cv_.notify_all();
    return;
  }
  if (job->state == IoState::kRunning) {
    job->cancel.store(true);
    job->stop.store(true);
    done_cv_.wait(lock, [&] { return job->state != IoState::kRunning; });
    if (job->state == IoState::kQueued) {  // pre-empted just before: drop it from the queue
      queue_.erase(std::remove(queue_.begin(), queue_.end(), job), queue_.end());
      job->state = IoState::kCancelled;
      done_cv_.notify_all();
    }
  }
}

void IoExecutor::set_priority(const IoTicket& ticket, int priority) {
  std::lock_guard lock(mu_);
  if (ticket.job()->state == IoState::kQueued) {
    ticket.job()->priority = priority;
    preempt_for(priority);
  }
}

void IoExecutor::preempt_for(int priority) {
  if (running_ && running_->priority > priority) running_->stop.store(true);
}

double IoExecutor::busy_s() const {
  std::lock_guard lock(mu_);
  return busy_s_;
}

void IoExecutor::run() {
  for (;;) {
    std::shared_ptr<IoJob> job;
    {
      std::unique_lock lock(mu_);
      work_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      auto it = std::min_element(queue_.begin(), queue_.end(), [](const auto& a, const auto& b) {
        return a->priority != b->priority ? a->priority < b->priority : a->seq < b->seq;
      });
      job = *it;
      queue_.erase(it);
      job->state = IoState::kRunning;
      job->stop.store(job->cancel.load());
      running_ = job;
    }
    const double t0 = now_s();
    std::uint64_t moved = 0;
    std::exception_ptr error;
    try {
      moved = link_->transfer(job->id, job->dst, job->moved, job->stop);
    } catch (...) {
      error = std::current_exception();  // never escapes the thread: handed to the ticket
    }
    bytes_moved_ += moved;
    {
      std::lock_guard lock(mu_);
      running_.reset();
      busy_s_ += now_s() - t0;
      job->moved += moved;
      job->error = error;
      job->finished_s = now_s();
      if (job->cancel.load() || error || (stopping_ && job->moved < job->bytes)) {
        job->state = IoState::kCancelled;
      } else if (job->moved < job->bytes && job->stop.load()) {  // pre-empted: back in the queue
        job->state = IoState::kQueued;
        queue_.push_back(job);
        ++preemptions_;
      } else {
        job->state = IoState::kDone;
        ++transfers_;
      }
    }
    done_cv_.notify_all();
  }
}

}  // namespace ferry::moe
