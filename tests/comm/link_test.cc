// Link emulation: timing bounds of one transfer and the sharing of a server's ingress (incast).
#include <gtest/gtest.h>

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

// M bytes at bandwidth B take at least M/B and at most 1.2·M/B + latency.
TEST(LinkEmulation, OneTransferTakesBytesOverBandwidthPlusLatency) {
  const LinkOptions link{50e6, 2e-3};  // 400 Mbps, 2 ms
  for (std::size_t bytes : {std::size_t{2'000'000}, std::size_t{5'000'000}}) {
    double elapsed = 0;
    run_local_ranks(2, [&](Communicator& c) {
      ShapedCommunicator s(&c, link);
      s.barrier();
      if (s.rank() == 0) {
        s.send(1, 1, std::vector<std::byte>(bytes));
      } else {
        double t0 = now_s();
        Message m = s.recv(0, 1);
        elapsed = now_s() - t0;
        EXPECT_EQ(m.data.size(), bytes);
      }
    });
    double ideal = bytes / link.bandwidth_bytes_per_s;
    EXPECT_GE(elapsed, ideal) << bytes;
    EXPECT_LE(elapsed, 1.2 * ideal + link.latency_s) << bytes;
  }
}

// Four workers pushing M bytes each to one server at once share its ingress: the last push
// arrives after 4·M/B, not M/B.
TEST(LinkEmulation, ServerIngressIsShared) {
  const LinkOptions link{100e6, 0};
  const std::size_t bytes = 2'000'000;
  std::vector<double> arrival(4);
  double start = 0;
  run_local_ranks(5, [&](Communicator& c) {
    ShapedCommunicator s(&c, link);
    s.barrier();
    if (s.rank() == 4) {
      start = now_s();
      for (int k = 0; k < 4; ++k) {
        Message m = s.recv(kAnySource, 2);
        arrival[k] = now_s() - start;
      }
    } else {
      s.send(4, 2, std::vector<std::byte>(bytes));
    }
  });
  double one = bytes / link.bandwidth_bytes_per_s;
  EXPECT_GE(arrival[3], 4 * one * 0.95);  // barrier skew between ranks is tiny next to 20 ms
  EXPECT_LE(arrival[3], 4 * one * 1.2 + 0.01);
  EXPECT_LT(arrival[0], 1.5 * one);
}

TEST(LinkEmulation, CountersReportPayloadBytes) {
  run_local_ranks(2, [](Communicator& c) {
    ShapedCommunicator s(&c, LinkOptions{1e9, 0});
    if (s.rank() == 0) s.send(1, 0, std::vector<std::byte>(777));
    else s.recv(0, 0);
    EXPECT_EQ(s.rank() == 0 ? s.counters().bytes_sent : s.counters().bytes_recv, 777u);
  });
}

}  // namespace
}  // namespace ferry::comm
