// Collectives of every backend over world sizes 1, 2, 3, 4, 7 and odd buffer sizes.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

#include "comm/link/shaped_communicator.h"
#include "comm/local/local_communicator.h"
#include "core/error.h"

namespace ferry::comm {
namespace {

// Rank r's input for element i: distinct per rank and element, exact in float.
float value(int rank, std::size_t i) { return static_cast<float>((rank + 1) * 3 + (i % 97)); }

void check_collectives(Communicator& c, std::size_t n) {
  const int size = c.size(), rank = c.rank();
  std::vector<float> data(n);
  for (std::size_t i = 0; i < n; ++i) data[i] = value(rank, i);
  c.allreduce_sum(std::span<float>(data));
  for (std::size_t i = 0; i < n; ++i) {
    float expect = 0;
    for (int r = 0; r < size; ++r) expect += value(r, i);
    ASSERT_EQ(data[i], expect) << "allreduce element " << i << " rank " << rank << " size " << size;
  }
  std::vector<double> d(n, rank + 0.5);
  c.allreduce_sum(std::span<double>(d));
  for (double x : d) ASSERT_DOUBLE_EQ(x, size * size / 2.0);

  for (int root = 0; root < size; ++root) {
    std::vector<std::byte> buf(n, std::byte(rank == root ? 0x5a + root : 0));
    c.broadcast(buf, root);
    for (auto b : buf) ASSERT_EQ(b, std::byte(0x5a + root)) << "broadcast root " << root;
  }

  std::vector<std::byte> mine(rank + n % 5, std::byte(rank));  // different sizes per rank
  auto all = c.allgather(mine);
  ASSERT_EQ(static_cast<int>(all.size()), size);
  for (int r = 0; r < size; ++r) {
    ASSERT_EQ(all[r].size(), r + n % 5);
    for (auto b : all[r]) ASSERT_EQ(b, std::byte(r));
  }
  c.barrier();
}

class LocalCollectives : public ::testing::TestWithParam<int> {};

TEST_P(LocalCollectives, AllreduceBroadcastAllgatherBarrier) {
  for (std::size_t n : {0, 1, 5, 7, 1001, 65537}) run_local_ranks(GetParam(), [&](Communicator& c) { check_collectives(c, n); });
}

TEST_P(LocalCollectives, SameResultsOverAnEmulatedLink) {
  LinkOptions link{1e9, 5e-6};
  for (std::size_t n : {1, 13, 4099})
    run_local_ranks(GetParam(), [&](Communicator& c) {
      ShapedCommunicator shaped(&c, link);
      check_collectives(shaped, n);
    });
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, LocalCollectives, ::testing::Values(1, 2, 3, 4, 7));

TEST(LocalPointToPoint, OrderPerPairAndAnySource) {
  run_local_ranks(3, [](Communicator& c) {
    if (c.rank() != 0) {
      for (int i = 0; i < 50; ++i) {
        std::int32_t v = c.rank() * 1000 + i;
        c.send(0, 7, std::as_bytes(std::span(&v, 1)));
      }
      return;
    }
    std::vector<int> next = {0, 0, 0};
    for (int k = 0; k < 100; ++k) {
      Message m = c.recv(kAnySource, 7);
      std::int32_t v;
      ASSERT_EQ(m.data.size(), sizeof v);
      std::memcpy(&v, m.data.data(), sizeof v);
      ASSERT_EQ(v, m.src * 1000 + next[m.src]++);
    }
  });
}

TEST(LocalPointToPoint, IrecvOfWrongSizeIsAFormatError) {
  run_local_ranks(2, [](Communicator& c) {
    if (c.rank() == 0) {
      c.isend(1, 3, std::vector<std::byte>(10)).wait();
    } else {
      std::vector<std::byte> out(8);
      Ticket t = c.irecv(0, 3, out);
      try {
        t.wait();
        FAIL() << "no error";
      } catch (const FormatError& e) {
        EXPECT_NE(std::string(e.what()).find("10 bytes, expected 8"), std::string::npos) << e.what();
      }
    }
  });
}

TEST(LocalCounters, CountPayloadBytes) {
  run_local_ranks(2, [](Communicator& c) {
    if (c.rank() == 0) c.send(1, 0, std::vector<std::byte>(1234));
    else c.recv(0, 0);
    c.barrier();
    auto k = c.counters();
    if (c.rank() == 0) EXPECT_GE(k.bytes_sent, 1234u);
    else EXPECT_GE(k.bytes_recv, 1234u);
  });
}

}  // namespace
}  // namespace ferry::comm
