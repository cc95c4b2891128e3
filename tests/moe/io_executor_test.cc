// The AsyncIO executor's pre-emption: a demand load submitted while a prefetch is on the link
// waits for at most the chunk in flight; the prefetch resumes where it stopped and its bytes come
// out whole; a cancel of a pre-empted (queued again) prefetch cancels it.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "moe/store/io_executor.h"
#include "moe/store/link.h"

namespace ferry::moe {
namespace {

constexpr std::uint64_t kChunk = 1024, kChunks = 200, kBytes = kChunk * kChunks;  // 0.4 s a transfer

// Writes byte (offset + expert) % 251 chunk by chunk, 2 ms per chunk, and logs each chunk's owner.
class ChunkLink : public Link {
 public:
  std::uint64_t transfer(ExpertId id, std::byte* dst, std::uint64_t from, const std::atomic<bool>& stop) override {
    std::uint64_t done = from;
    if (from > 0) {
      std::lock_guard lock(mu);
      resumed_from.push_back(from);
    }
    while (done < kBytes) {
      if (stop.load()) break;
      for (std::uint64_t i = done; i < done + kChunk; ++i) dst[i] = static_cast<std::byte>((i + id.expert) % 251);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      done += kChunk;
      std::lock_guard lock(mu);
      log.push_back(id.expert);
    }
    return done - from;
  }
  double estimate_s(std::uint64_t) const override { return kChunks * 2e-3; }
  // Until `n` chunks have been moved (a transfer is on the link).
  void wait_for_chunks(std::size_t n) {
    for (;;) {
      std::lock_guard lock(mu);
      if (log.size() >= n) return;
    }
  }
  std::string describe() const override { return "test chunks"; }

  std::mutex mu;
  std::vector<int> log;  // expert of each chunk moved; -1 marks the demand's submission
  std::vector<std::uint64_t> resumed_from;
};

bool whole(const std::vector<std::byte>& b, int expert) {
  for (std::uint64_t i = 0; i < kBytes; ++i)
    if (b[i] != static_cast<std::byte>((i + expert) % 251)) return false;
  return true;
}

TEST(IoExecutor, DemandLoadPreemptsARunningPrefetchAtTheNextChunk) {
  ChunkLink link;
  IoExecutor io(&link);
  io.start();
  std::vector<std::byte> a(kBytes), b(kBytes);
  IoTicket prefetch = io.submit({0, 1}, a.data(), kPriorityPrefetch, kBytes);
  link.wait_for_chunks(3);
  IoTicket demand;
  {
    std::lock_guard lock(link.mu);  // the marker and the submission, between two chunks
    link.log.push_back(-1);
    demand = io.submit({0, 2}, b.data(), kPriorityDemand, kBytes);
  }
  ASSERT_TRUE(demand.wait());
  ASSERT_TRUE(prefetch.wait());
  EXPECT_TRUE(whole(a, 1));
  EXPECT_TRUE(whole(b, 2));
  EXPECT_EQ(io.preemptions(), 1u);
  // After the marker: at most one more chunk of the prefetch (without pre-emption: the rest of it),
  // then all of the demand's chunks in a row.
  std::vector<int> after;
  {
    std::lock_guard lock(link.mu);
    auto it = std::find(link.log.begin(), link.log.end(), -1);
    after.assign(it + 1, link.log.end());
    ASSERT_EQ(link.resumed_from.size(), 1u);
    EXPECT_GT(link.resumed_from[0], 0u);
    EXPECT_LT(link.resumed_from[0], kBytes);
  }
  std::size_t first = std::find(after.begin(), after.end(), 2) - after.begin();
  EXPECT_LE(first, 1u);
  ASSERT_LE(first + kChunks, after.size());
  for (std::size_t i = first; i < first + kChunks; ++i) EXPECT_EQ(after[i], 2) << i;
  EXPECT_EQ(io.bytes_moved(), 2 * kBytes);
  io.stop();
}

TEST(IoExecutor, CancelOfAPreemptedPrefetchCancelsIt) {
  ChunkLink link;
  IoExecutor io(&link);
  io.start();
  std::vector<std::byte> a(kBytes), b(kBytes);
  IoTicket prefetch = io.submit({0, 1}, a.data(), kPriorityPrefetch, kBytes);
  link.wait_for_chunks(1);
  IoTicket demand = io.submit({0, 2}, b.data(), kPriorityDemand, kBytes);
  io.cancel(prefetch);  // running or queued again: either way it ends cancelled
  EXPECT_FALSE(prefetch.wait());
  ASSERT_TRUE(demand.wait());
  EXPECT_TRUE(whole(b, 2));
  io.stop();
}

}  // namespace
}  // namespace ferry::moe
