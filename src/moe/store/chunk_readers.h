// Reads in flight for the file link. One O_DIRECT read at a time leaves the disk idle while the
// I/O thread copies the chunk it read and waits for a core (on 2 cores it shares them with the
// compute threads); a cloud volume or an NVMe drive also serves several requests at once faster
// than one. So the link hands each chunk (read, copy into the slot, check) to one of `readers`
// threads, each with its own aligned buffer, and keeps up to `readers` of them in flight. With
// one reader the calling thread does the work itself, as the link did before.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace ferry::moe {

class ChunkReaders {
 public:
  // One chunk's work, given the aligned buffer (buffer_bytes, aligned to `align`) of the thread
  // that runs it.
  using Job = std::function<void(std::byte* buffer)>;

  // Starts `readers` - 1 threads (none for one reader); `readers` >= 1.
  ChunkReaders(int readers, std::uint64_t buffer_bytes, std::uint64_t align);
  // Waits for the jobs in flight, then joins the threads.
  ~ChunkReaders();
  ChunkReaders(const ChunkReaders&) = delete;
  ChunkReaders& operator=(const ChunkReaders&) = delete;

  // Runs `job` on a free reader; blocks while `readers` jobs are in flight. With one reader,
  // runs it here and now (its exception is then kept for drain(), as a thread's is).
  void submit(Job job);
  // Waits until every submitted job has finished; rethrows the first exception one of them threw
  // (jobs submitted after it are skipped) and forgets it.
  void drain();

  int readers() const { return readers_; }

 private:
  struct FreeDeleter {
    void operator()(void* p) const { std::free(p); }
  };
  using Buffer = std::unique_ptr<std::byte, FreeDeleter>;

  void run(std::byte* buffer);

  const int readers_;
  std::vector<Buffer> buffers_;  // one per reader; buffers_[0] is the calling thread's with one reader
  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<Job> queue_;       // guarded by mu_
  int in_flight_ = 0;           // queued + running, guarded by mu_
  bool stopping_ = false;       // guarded by mu_
  std::exception_ptr error_;    // the first job's exception since the last drain(), guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace ferry::moe
