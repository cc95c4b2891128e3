// The file link's readers (store/chunk_readers.h): every submitted job runs once, on an aligned
// buffer of its own, never more than `readers` at once; drain() returns when all have finished and
// rethrows the first error, after which submitted jobs are skipped until the next drain().
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "moe/store/chunk_readers.h"

namespace ferry::moe {
namespace {

TEST(ChunkReaders, EveryJobRunsOnceWithAtMostReadersInFlight) {
  for (int readers : {1, 2, 3, 7}) {
    ChunkReaders pool(readers, 8192 + 64, 4096);
    EXPECT_EQ(pool.readers(), readers);
    std::vector<std::atomic<int>> runs(50);
    std::atomic<int> running{0}, most{0};
    std::set<std::byte*> buffers;
    std::mutex mu;
    for (int round = 0; round < 3; ++round) {
      for (auto& r : runs) r = 0;
      for (int j = 0; j < 50; ++j)
        pool.submit([&, j](std::byte* buffer) {
          const int now = ++running;
          for (int m = most.load(); now > m && !most.compare_exchange_weak(m, now);) {
          }
          EXPECT_EQ(reinterpret_cast<std::uintptr_t>(buffer) % 4096, 0u);
          buffer[0] = buffer[8192 + 63] = std::byte{1};  // the whole buffer is there
          {
            std::lock_guard lock(mu);
            buffers.insert(buffer);
          }
          if (j % 7 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
          ++runs[j];
          --running;
        });
      pool.drain();
      EXPECT_EQ(running.load(), 0);  // drain() returned after every job finished
      for (int j = 0; j < 50; ++j) EXPECT_EQ(runs[j].load(), 1) << "job " << j << ", " << readers << " readers";
    }
    EXPECT_LE(most.load(), readers);
    EXPECT_LE(buffers.size(), static_cast<std::size_t>(readers));
  }
}

TEST(ChunkReaders, TheFirstErrorIsRethrownAtDrainThenTheReadersGoOn) {
  for (int readers : {1, 4}) {
    ChunkReaders pool(readers, 4096, 4096);
    std::atomic<int> ran{0};
    pool.submit([&](std::byte*) { ++ran; });
    pool.submit([&](std::byte*) { throw std::runtime_error("read failed at 42"); });
    pool.submit([&](std::byte*) { throw std::runtime_error("a later error"); });
    try {
      pool.drain();
      ADD_FAILURE() << readers << " readers: no error";
    } catch (const std::runtime_error& e) {
      // The first one submitted, when one reader runs them in order; one of them otherwise.
      if (readers == 1) {
        EXPECT_STREQ(e.what(), "read failed at 42");
      }
    }
    if (readers == 1) {  // in order: what is submitted after an error, before drain(), is skipped
      pool.submit([&](std::byte*) { throw std::runtime_error("first"); });
      pool.submit([&](std::byte*) { ++ran; });
      EXPECT_THROW(pool.drain(), std::runtime_error);
    }
    EXPECT_EQ(ran.load(), 1);
    for (int j = 0; j < 10; ++j) pool.submit([&](std::byte*) { ++ran; });
    pool.drain();  // the error was forgotten
    EXPECT_EQ(ran.load(), 11) << readers << " readers";
  }
}

}  // namespace
}  // namespace ferry::moe
