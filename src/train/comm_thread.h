// The background communication thread of a worker: push, pull, compression and decoding of
// iteration t run here while the compute thread runs iteration t+1 (OD-SGD, SSD-SGD, CD-SGD,
// WFBP). Tasks run one at a time in submission order, so collectives issued from here keep the
// same order on every rank. Each submit() returns a ticket; an exception thrown by a task is
// captured and re-thrown by that ticket's wait().
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

#include "comm/ticket.h"

namespace ferry::train {

class CommThread {
 public:
  CommThread() = default;
  // Joins the thread after running what was submitted (see stop()).
  ~CommThread();
  CommThread(const CommThread&) = delete;
  CommThread& operator=(const CommThread&) = delete;

  // Starts the thread; idempotent.
  void start();
  // Queues `task`; the ticket completes when it has run.
  comm::Ticket submit(std::function<void()> task);
  // Runs every queued task, then joins; idempotent.
  void stop();

 private:
  void loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::packaged_task<void()>> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace ferry::train
