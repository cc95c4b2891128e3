// Link emulation: the NIC arithmetic exactly, and that real transfers are paced by it (lower bounds).
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "comm/link/link_options.h"
#include "comm/link/nic_clock.h"
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

// --link is a spec of the link registry, in MoE's grammar (core/link_spec.h): the key form, the
// positional form and the bare rate are one link; MoE's kinds are not training's.
TEST(LinkSpec, SpecFormsAreOneLink) {
  for (const char* text : {"1Gbps,50us", "emulated:1Gbps,50us", "emulated:bandwidth=1Gbps,latency=50us",
                           "Emulated: bandwidth=1Gbps, latency=50us"}) {
    const LinkOptions l = parse_link_spec(text);
    EXPECT_DOUBLE_EQ(l.bandwidth_bytes_per_s, 1.25e8) << text;
    EXPECT_DOUBLE_EQ(l.latency_s, 50e-6) << text;
  }
  EXPECT_DOUBLE_EQ(parse_link_spec("emulated:bandwidth=10Gbps").latency_s, 0);
  EXPECT_FALSE(parse_link_spec("").enabled());
  for (const char* bad : {"emulated", "none:rate=1Gbps", "emulated:latency=50us", "emulated:speed=1Gbps", "pcie4",
                          "emulated:bandwidth=1Gbps,rate=1Gbps"}) {
    try {
      parse_link_spec(bad);
      FAIL() << bad;
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("--link"), std::string::npos) << e.what();
    }
  }
  const std::string help = link_help();
  for (const char* kind : {"emulated (", "none ("}) EXPECT_NE(help.find(kind), std::string::npos) << help;
}

// The pacing arithmetic, exactly: M bytes at bandwidth B leave the sender after M/B and arrive a
// latency later.
TEST(NicClock, OneTransferTakesBytesOverBandwidthPlusLatency) {
  const LinkOptions link{1e6, 2e-3};
  NicClock sender(link), receiver(link);
  const double left = sender.depart(10.0, 2'000'000);
  EXPECT_DOUBLE_EQ(left, 12.0);
  EXPECT_DOUBLE_EQ(receiver.arrive(left, 2'000'000), 12.0 + 2e-3);
  // A second message queues behind the first on the sender's egress.
  EXPECT_DOUBLE_EQ(sender.depart(10.5, 1'000'000), 13.0);
  // A message handed over after the NIC went idle starts when it is handed over.
  EXPECT_DOUBLE_EQ(sender.depart(20.0, 500'000), 20.5);
}

// Four senders pushing M bytes each to one receiver at once share its ingress: the k-th delivery
// is at latency + k·M/B, the last at latency + 4·M/B, not M/B.
TEST(NicClock, ReceiverIngressIsShared) {
  const LinkOptions link{1e6, 1e-3};
  const std::size_t bytes = 250'000;  // M/B = 0.25 s
  NicClock server(link);
  std::vector<double> left;
  for (int k = 0; k < 4; ++k) left.push_back(NicClock(link).depart(0.0, bytes));
  for (int k = 0; k < 4; ++k) EXPECT_DOUBLE_EQ(server.arrive(left[k], bytes), 1e-3 + 0.25 * (k + 1)) << k;
  // Latency is paid once in flight, not per queued message: a fifth message that left long after
  // the queue drained arrives a latency after it left.
  EXPECT_DOUBLE_EQ(server.arrive(5.0, bytes), 5.0 + 1e-3);
}

// The decorator paces real transfers by that arithmetic: a message is never delivered before the
// link could have carried it (the bound holds on any machine; a loaded one only delivers later).
TEST(LinkEmulation, NoTransferBeatsBytesOverBandwidthPlusLatency) {
  const LinkOptions link{50e6, 2e-3};  // 400 Mbps, 2 ms
  for (std::size_t bytes : {std::size_t{2'000'000}, std::size_t{5'000'000}}) {
    double sent = 0, received = 0;
    run_local_ranks(2, [&](Communicator& c) {
      ShapedCommunicator s(&c, link);
      s.barrier();
      if (s.rank() == 0) {
        sent = now_s();
        s.send(1, 1, std::vector<std::byte>(bytes));
      } else {
        Message m = s.recv(0, 1);
        received = now_s();
        EXPECT_EQ(m.data.size(), bytes);
      }
    });
    EXPECT_GE(received - sent, bytes / link.bandwidth_bytes_per_s + link.latency_s) << bytes;
  }
}

// Four workers pushing M bytes each to one server at once: the last push is delivered no earlier
// than 4·M/B after the earliest send.
TEST(LinkEmulation, ServerIngressIsShared) {
  const LinkOptions link{100e6, 0};
  const std::size_t bytes = 2'000'000;
  const double one = bytes / link.bandwidth_bytes_per_s;
  std::vector<double> arrival(4), sent(4);  // absolute times on the monotonic clock
  run_local_ranks(5, [&](Communicator& c) {
    ShapedCommunicator s(&c, link);
    s.barrier();
    if (s.rank() == 4) {
      for (int k = 0; k < 4; ++k) {
        EXPECT_EQ(s.recv(kAnySource, 2).data.size(), bytes);
        arrival[k] = now_s();
      }
    } else {
      sent[s.rank()] = now_s();
      s.send(4, 2, std::vector<std::byte>(bytes));
    }
  });
  const double first_send = *std::min_element(sent.begin(), sent.end());
  for (int k = 0; k < 4; ++k) EXPECT_GE(arrival[k] - first_send, (k + 1) * one) << k;
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
