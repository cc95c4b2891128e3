// Link emulation: timing bounds of one transfer and the sharing of a server's ingress (incast).
#include <gtest/gtest.h>

#include <algorithm>

#include "comm/link/link_options.h"
#include "comm/link/shaped_communicator.h"
#include "comm/local/local_communicator.h"
#include "core/clock.h"
#include "core/error.h"

namespace ferry::comm {
namespace {

TEST(LinkSpec, Parses) {
  auto l = parse_link_spec("1Gbps,50us");
  EXPECT_DOUBLE_EQ(l.bandwidth_bytes_per_s, 1.25e8);
  EXPECT_DOUBLE_EQ(l.latency_s, 50e-6);
  EXPECT_FALSE(parse_link_spec("none").enabled());
  EXPECT_DOUBLE_EQ(parse_link_spec("10Gbps").latency_s, 0);
}

TEST(LinkSpec, MalformedIsClear) {
  for (const char* bad : {"1Gbps,", "fast", "1Gbps,50", "1Gbps,50us,3", ",50us", "-1Gbps"}) {
    try {
      parse_link_spec(bad);
      FAIL() << bad;
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("--link '") + bad + "'"), std::string::npos) << e.what();
    }
  }
}

// Timing bounds hold on an idle machine; on a loaded one a sleeping thread wakes late. The lower
// bound must hold on every attempt, the upper bound on the best of a few.
constexpr int kAttempts = 5;

// M bytes at bandwidth B take at least M/B and at most 1.2·M/B + latency.
TEST(LinkEmulation, OneTransferTakesBytesOverBandwidthPlusLatency) {
  const LinkOptions link{50e6, 2e-3};  // 400 Mbps, 2 ms
  for (std::size_t bytes : {std::size_t{2'000'000}, std::size_t{5'000'000}}) {
    double best = 1e9;
    for (int attempt = 0; attempt < kAttempts; ++attempt) {
      double elapsed = 0;
      run_local_ranks(2, [&](Communicator& c) {
        ShapedCommunicator s(&c, link);
        // The receiver's clock starts before the barrier, so before the send can start: a
        // receiver scheduled late after the barrier cannot make the transfer look shorter.
        const double t0 = now_s();
        s.barrier();
        if (s.rank() == 0) {
          s.send(1, 1, std::vector<std::byte>(bytes));
        } else {
          Message m = s.recv(0, 1);
          elapsed = now_s() - t0;
          EXPECT_EQ(m.data.size(), bytes);
        }
      });
      EXPECT_GE(elapsed, bytes / link.bandwidth_bytes_per_s) << bytes;
      best = std::min(best, elapsed);
    }
    // The barrier's own messages add a few latencies to the measured time.
    EXPECT_LE(best, 1.2 * bytes / link.bandwidth_bytes_per_s + 3 * link.latency_s) << bytes;
  }
}

// Four workers pushing M bytes each to one server at once share its ingress: the last push
// arrives after 4·M/B, not M/B.
TEST(LinkEmulation, ServerIngressIsShared) {
  const LinkOptions link{100e6, 0};
  const std::size_t bytes = 2'000'000;
  const double one = bytes / link.bandwidth_bytes_per_s;
  double best_last = 1e9, best_first = 1e9;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    std::vector<double> arrival(4), sent(4);  // absolute times on the monotonic clock
    run_local_ranks(5, [&](Communicator& c) {
      ShapedCommunicator s(&c, link);
      s.barrier();
      if (s.rank() == 4) {
        for (int k = 0; k < 4; ++k) {
          s.recv(kAnySource, 2);
          arrival[k] = now_s();
        }
      } else {
        sent[s.rank()] = now_s();
        s.send(4, 2, std::vector<std::byte>(bytes));
      }
    });
    double first_send = *std::min_element(sent.begin(), sent.end());
    double last_send = *std::max_element(sent.begin(), sent.end());
    // Never faster than the shared ingress allows, counted from the earliest send.
    EXPECT_GE(arrival[3] - first_send, 4 * one * 0.999);
    best_last = std::min(best_last, arrival[3] - last_send);
    best_first = std::min(best_first, arrival[0] - first_send);
  }
  EXPECT_LE(best_last, 4 * one * 1.2 + 0.01);
  EXPECT_LT(best_first, 1.5 * one);
}

TEST(LinkEmulation, CountersReportPayloadBytes) {
  run_local_ranks(2, [](Communicator& c) {
    ShapedCommunicator s(&c, LinkOptions{1e9, 0});
    if (s.rank() == 0)
      s.send(1, 0, std::vector<std::byte>(777));
    else
      s.recv(0, 0);
    EXPECT_EQ(s.rank() == 0 ? s.counters().bytes_sent : s.counters().bytes_recv, 777u);
  });
}

}  // namespace
}  // namespace ferry::comm
