#include "core/bounded_queue.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace ferry {
namespace {

TEST(BoundedQueue, FifoAcrossThreadsWithBackpressure) {
  BoundedQueue<int> q(3);
  constexpr int kN = 10000;
  std::thread producer([&] {
    for (int i = 0; i < kN; ++i) ASSERT_TRUE(q.push(i));
    q.close();
  });
  std::vector<int> got;
  while (auto v = q.pop()) {
    EXPECT_LE(q.size(), 3u);
    got.push_back(*v);
  }
  producer.join();
  ASSERT_EQ(got.size(), static_cast<size_t>(kN));
  for (int i = 0; i < kN; ++i) EXPECT_EQ(got[i], i);
}

TEST(BoundedQueue, CloseWakesWaitersAndRejectsPushes) {
  BoundedQueue<int> q(1);
  std::thread waiter([&] { EXPECT_FALSE(q.pop().has_value()); });
  q.close();
  waiter.join();
  EXPECT_FALSE(q.push(1));
}

TEST(BoundedQueue, PopForTimesOut) {
  BoundedQueue<int> q(1);
  EXPECT_FALSE(q.pop_for(0.01).has_value());
  q.push(7);
  EXPECT_EQ(q.pop_for(0.01).value(), 7);
}

}  // namespace
}  // namespace ferry
