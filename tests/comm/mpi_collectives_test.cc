// The same collectives under mpirun, each process one rank (label `dist`).
#include <gtest/gtest.h>

#include <cstring>

#include "comm/link/shaped_communicator.h"
#include "comm/mpi/mpi_communicator.h"

namespace ferry::comm {
namespace {

Communicator* g_comm = nullptr;  // set in main, lives until MPI is finalised

TEST(Mpi, AllreduceSumsOverRanks) {
  for (std::size_t n : {1, 7, 100003}) {
    std::vector<float> v(n, static_cast<float>(g_comm->rank() + 1));
    g_comm->allreduce_sum(std::span<float>(v));
    float expect = g_comm->size() * (g_comm->size() + 1) / 2.0f;
    for (float x : v) ASSERT_EQ(x, expect);
  }
}

TEST(Mpi, PointToPointAnySizeAndAnySource) {
  const int n = g_comm->size();
  if (g_comm->rank() != 0) {
    g_comm->send(0, 5, std::vector<std::byte>(g_comm->rank() * 1001, std::byte(g_comm->rank())));
  } else {
    for (int k = 1; k < n; ++k) {
      Message m = g_comm->recv(kAnySource, 5);
      ASSERT_EQ(m.data.size(), static_cast<std::size_t>(m.src) * 1001);
      for (auto b : m.data) ASSERT_EQ(b, std::byte(m.src));
    }
  }
  g_comm->barrier();
}

TEST(Mpi, BroadcastAllgatherAndShapedAllreduce) {
  std::vector<std::byte> b(33, std::byte(g_comm->rank() == 1 % g_comm->size() ? 9 : 0));
  g_comm->broadcast(b, 1 % g_comm->size());
  for (auto x : b) ASSERT_EQ(x, std::byte(9));
  auto all = g_comm->allgather(std::vector<std::byte>(g_comm->rank() + 1, std::byte(g_comm->rank())));
  for (int r = 0; r < g_comm->size(); ++r) ASSERT_EQ(all[r].size(), static_cast<std::size_t>(r + 1));
  ShapedCommunicator s(g_comm, LinkOptions{1e9, 1e-5});
  std::vector<float> v(1001, 1.0f);
  s.allreduce_sum(std::span<float>(v));
  for (float x : v) ASSERT_EQ(x, static_cast<float>(g_comm->size()));
  s.barrier();
}

// Under link emulation a large message leaves on the sender's lane thread with a send that
// completes only once the receiver has a matching receive posted, in order per destination.
// Waiting for the second of two posted receives first must still finish (wfbp on the PS waits
// for its front-layer pulls before its back-layer ones).
TEST(Mpi, ShapedReceivesCanBeWaitedForOutOfOrder) {
  if (g_comm->size() < 2) GTEST_SKIP() << "needs two ranks";
  ShapedCommunicator s(g_comm, LinkOptions{1e10, 1e-5});
  const std::size_t n = 1 << 20;  // far above every shared-memory eager limit
  if (s.rank() == 0) {
    auto a = s.isend(1, 71, std::vector<std::byte>(n, std::byte(1)));
    auto b = s.isend(1, 72, std::vector<std::byte>(n, std::byte(2)));
    b.wait();
    a.wait();
  } else if (s.rank() == 1) {
    std::vector<std::byte> a(n), b(n);
    auto ta = s.irecv(0, 71, a);
    auto tb = s.irecv(0, 72, b);
    tb.wait();
    ta.wait();
    EXPECT_EQ(a.front(), std::byte(1));
    EXPECT_EQ(b.back(), std::byte(2));
  }
  s.barrier();
}

}  // namespace
}  // namespace ferry::comm

int main(int argc, char** argv) {
  ferry::comm::MpiRuntime mpi(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  auto comm = std::make_unique<ferry::comm::MpiCommunicator>(ferry::comm::mpi_wait_from_environment());
  ferry::comm::g_comm = comm.get();
  if (comm->rank() != 0) ::testing::GTEST_FLAG(output) = "";
  EXPECT_TRUE(mpi.thread_multiple()) << "MPI granted only " << mpi.thread_level();
  int rc = RUN_ALL_TESTS();
  comm.reset();
  return rc;
}
