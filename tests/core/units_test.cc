#include "core/units.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace ferry {
namespace {

TEST(Units, BandwidthBitsAndBytes) {
  EXPECT_DOUBLE_EQ(parse_bandwidth_bytes_per_s("10Gbps"), 10e9 / 8);
  EXPECT_DOUBLE_EQ(parse_bandwidth_bytes_per_s("500Mbps"), 500e6 / 8);
  EXPECT_DOUBLE_EQ(parse_bandwidth_bytes_per_s("12GBps"), 12e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth_bytes_per_s("1.5GB/s"), 1.5e9);
  // tc's rates (decimal bits), as scripts/cluster.sh --rate takes them.
  EXPECT_DOUBLE_EQ(parse_bandwidth_bytes_per_s("300mbit"), 300e6 / 8);
  EXPECT_DOUBLE_EQ(parse_bandwidth_bytes_per_s("1gbit"), 1e9 / 8);
}

TEST(Units, Durations) {
  EXPECT_DOUBLE_EQ(parse_duration_s("50us"), 50e-6);
  EXPECT_DOUBLE_EQ(parse_duration_s("1.5ms"), 1.5e-3);
  EXPECT_DOUBLE_EQ(parse_duration_s("2s"), 2.0);
  EXPECT_DOUBLE_EQ(parse_duration_s("0"), 0.0);
}

TEST(Units, Bytes) {
  EXPECT_EQ(parse_bytes("24GiB"), 24ull << 30);
  EXPECT_EQ(parse_bytes("512MiB"), 512ull << 20);
  EXPECT_EQ(parse_bytes("1.5GB"), 1500000000ull);
  EXPECT_EQ(parse_bytes("4096"), 4096ull);
  // Up to 2^64 - 1; above, refused (1.7e19 wrapped to 2^63 through llround).
  EXPECT_EQ(parse_bytes("1.7e19B"), 17000000000000000000ull);
  EXPECT_THROW(parse_bytes("18446744073709551616"), InvalidArgument);  // 2^64
  EXPECT_THROW(parse_bytes("1e300B"), InvalidArgument);
}

TEST(Units, PercentagesAndDurationTexts) {
  EXPECT_DOUBLE_EQ(parse_percent("30%"), 30);
  EXPECT_DOUBLE_EQ(parse_percent("12.5%"), 12.5);
  EXPECT_THROW(parse_percent("30"), InvalidArgument);
  EXPECT_THROW(parse_percent("-1%"), InvalidArgument);
  // What a flag writes parse_duration_s reads back.
  for (double s : {50e-6, 1.5e-3, 2.0, 100e-9, 12.345e-6, 3600.0}) EXPECT_DOUBLE_EQ(parse_duration_s(duration_text(s)), s) << s;
  EXPECT_EQ(duration_text(50e-6), "50us");
  EXPECT_EQ(duration_text(1.5e-3), "1.5ms");
  EXPECT_EQ(duration_text(0), "0");
}

TEST(Units, ErrorsNameTheInputAndTheExpectation) {
  try {
    parse_bandwidth_bytes_per_s("10Gbs");
    FAIL() << "no throw";
  } catch (const InvalidArgument& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("'10Gbs'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("unknown unit 'Gbs'"), std::string::npos) << msg;
  }
  EXPECT_THROW(parse_bandwidth_bytes_per_s("fast"), InvalidArgument);
  EXPECT_THROW(parse_bandwidth_bytes_per_s("0Gbps"), InvalidArgument);
  EXPECT_THROW(parse_bandwidth_bytes_per_s("10"), InvalidArgument);
  EXPECT_THROW(parse_duration_s("-5us"), InvalidArgument);
  EXPECT_THROW(parse_duration_s("5 parsecs"), InvalidArgument);
  EXPECT_THROW(parse_bytes("12XB"), InvalidArgument);
  EXPECT_THROW(parse_bytes(""), InvalidArgument);
  // A caller names the flag a value came from.
  try {
    parse_bytes("lots", "--device-mem");
    FAIL() << "no throw";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("invalid --device-mem 'lots'"), std::string::npos) << e.what();
  }
}

TEST(Units, Formatting) {
  EXPECT_EQ(format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(format_bandwidth(1.25e8), "1 Gbps");
  EXPECT_EQ(format_duration(50e-6), "50 us");
}

}  // namespace
}  // namespace ferry

namespace ferry {
namespace {

TEST(BandwidthLatency, OneGrammarForEveryLink) {
  const BandwidthLatency a = parse_bandwidth_latency("1Gbps,50us");
  EXPECT_DOUBLE_EQ(a.bandwidth_bytes_per_s, 1.25e8);
  EXPECT_DOUBLE_EQ(a.latency_s, 50e-6);
  const BandwidthLatency b = parse_bandwidth_latency("12GBps");
  EXPECT_DOUBLE_EQ(b.bandwidth_bytes_per_s, 12e9);
  EXPECT_DOUBLE_EQ(b.latency_s, 0);
  for (const char* bad : {"", "1Gbps,", "1Gbps,50", "1Gbps,50us,3", ",50us", "fast"})
    EXPECT_THROW(parse_bandwidth_latency(bad), InvalidArgument) << bad;
  // A latency a std::chrono sleep cannot hold ran as no latency: anything above an hour is refused,
  // and the message names the whole flag value.
  EXPECT_DOUBLE_EQ(parse_bandwidth_latency("1Gbps,1h").latency_s, 3600);
  try {
    parse_bandwidth_latency("1Gbps,1e99us", "file:1Gbps,1e99us");
    ADD_FAILURE() << "1e99us accepted";
  } catch (const InvalidArgument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("invalid --link 'file:1Gbps,1e99us'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("above one hour"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace ferry
