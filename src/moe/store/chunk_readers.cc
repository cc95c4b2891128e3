#include "moe/store/chunk_readers.h"

#include <utility>

#include "core/error.h"

namespace ferry::moe {

ChunkReaders::ChunkReaders(int readers, std::uint64_t buffer_bytes, std::uint64_t align) : readers_(readers) {
  FERRY_CHECK(readers_ >= 1, "chunk readers: ", readers_);
  for (int k = 0; k < readers_; ++k) {
    void* p = nullptr;
    if (posix_memalign(&p, align, buffer_bytes) != 0) FERRY_THROW(IoError, "cannot allocate the O_DIRECT buffer");
    buffers_.emplace_back(static_cast<std::byte*>(p));
  }
  if (readers_ > 1)
    for (int k = 0; k < readers_; ++k) threads_.emplace_back([this, b = buffers_[k].get()] { run(b); });
}

ChunkReaders::~ChunkReaders() {
  {
    std::unique_lock lock(mu_);
    done_cv_.wait(lock, [&] { return in_flight_ == 0; });
    stopping_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void ChunkReaders::submit(Job job) {
  std::unique_lock lock(mu_);
  if (error_) return;  // drain() reports it; what follows it is not read
  if (readers_ == 1) {
    lock.unlock();
    try {
      job(buffers_[0].get());
    } catch (...) {
      lock.lock();
      error_ = std::current_exception();
    }
    return;
  }
  done_cv_.wait(lock, [&] { return in_flight_ < readers_; });
  ++in_flight_;
  queue_.push_back(std::move(job));
  work_cv_.notify_one();
}

void ChunkReaders::drain() {
  std::unique_lock lock(mu_);
  done_cv_.wait(lock, [&] { return in_flight_ == 0; });
  if (std::exception_ptr e = std::exchange(error_, nullptr)) std::rethrow_exception(e);
}

void ChunkReaders::run(std::byte* buffer) {
  std::unique_lock lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, nothing left
    Job job = std::move(queue_.front());
    queue_.pop_front();
    const bool skip = error_ != nullptr;
    lock.unlock();
    std::exception_ptr error;
    if (!skip) {
      try {
        job(buffer);
      } catch (...) {
        error = std::current_exception();  // never escapes the thread: drain() rethrows it
      }
    }
    job = nullptr;
    lock.lock();
    if (error && !error_) error_ = error;
    --in_flight_;
    done_cv_.notify_all();
  }
}

}  // namespace ferry::moe
