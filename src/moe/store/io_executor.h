// AsyncIO: the thread that runs every expert transfer, so compute never copies. Jobs wait in a
// priority queue (lower priority value first, FIFO among equals): a demand load overtakes every
// queued prefetch and pre-empts a running one at its next chunk (the prefetch goes back to the
// queue with the bytes it has moved and resumes from there), so it waits at most one chunk for
// it; a queued job can be re-prioritised or cancelled, a running one stops at its next chunk.
// Results are tickets: wait() blocks until the bytes are in place.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "moe/store/expert_cache.h"
#include "moe/store/link.h"

namespace ferry::moe {

enum class IoState { kQueued, kRunning, kDone, kCancelled };

struct IoJob {
  ExpertId id;
  std::byte* dst = nullptr;  // device slot; stays allocated until the job is kDone/kCancelled
  int priority = 0;
  std::uint64_t seq = 0;
  std::uint64_t bytes = 0;           // the expert's size (a pre-empted job resumes until all moved)
  std::uint64_t moved = 0;           // bytes moved so far (guarded by the executor's mutex)
  std::atomic<bool> cancel{false};
  std::atomic<bool> stop{false};     // the link's stop flag: cancel, or a pre-empting demand load
  IoState state = IoState::kQueued;  // guarded by the executor's mutex
  std::exception_ptr error;          // set when the link threw; rethrown by wait()
  double submitted_s = 0, finished_s = 0;
};

class IoExecutor;

// Handle of one submitted transfer.
class IoTicket {
 public:
  IoTicket() = default;
  IoTicket(std::shared_ptr<IoJob> job, IoExecutor* exec) : job_(std::move(job)), exec_(exec) {}
  // Blocks until the transfer finished or was cancelled; rethrows a link error. True when done.
  bool wait() const;
  bool ready() const;
  bool valid() const { return job_ != nullptr; }
  const std::shared_ptr<IoJob>& job() const { return job_; }

 private:
  std::shared_ptr<IoJob> job_;
  IoExecutor* exec_ = nullptr;  // the executor outlives its tickets (both owned by the ExpertStore)
};

class IoExecutor {
 public:
  // `link` must outlive the executor.
  explicit IoExecutor(Link* link);
  ~IoExecutor();
  IoExecutor(const IoExecutor&) = delete;
  IoExecutor& operator=(const IoExecutor&) = delete;

  void start();
  // Cancels what is queued, finishes the running chunk, joins the thread.
  void stop();

  // `bytes`: the expert's size, so that a pre-empted transfer knows when it is complete.
  IoTicket submit(ExpertId id, std::byte* dst, int priority, std::uint64_t bytes);
  // Queued: removed at once. Running: stops at its next chunk; returns when the job no longer
  // touches its destination.
  void cancel(const IoTicket& ticket);
  // Moves a queued job (a prefetch becoming a demand load).
  void set_priority(const IoTicket& ticket, int priority);

  std::uint64_t bytes_moved() const { return bytes_moved_.load(); }
  std::uint64_t transfers() const { return transfers_.load(); }
  // Running prefetches a demand load stopped at a chunk boundary (each resumed later).
  std::uint64_t preemptions() const { return preemptions_.load(); }
  // Seconds the link was busy (sum of transfer durations).
  double busy_s() const;

 private:
  friend class IoTicket;
  void run();
  // With mu_ held: a job of `priority` was queued; a running job of a larger value stops at its
  // next chunk and goes back to the queue.
  void preempt_for(int priority);

  Link* link_;  // owned by the ExpertStore, outlives this executor
  mutable std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::vector<std::shared_ptr<IoJob>> queue_;
  std::uint64_t next_seq_ = 0;
  bool stopping_ = false;
  double busy_s_ = 0;
  std::atomic<std::uint64_t> bytes_moved_{0}, transfers_{0}, preemptions_{0};
  std::shared_ptr<IoJob> running_;  // guarded by mu_
  std::thread thread_;
};

}  // namespace ferry::moe
