// The links' grammar (core/link_spec.h) over a registry of its own: the bare rate reads as the kind
// that says so, the rate keys read alike for every kind, and the help lists every kind.
#include "core/link_spec.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace ferry {
namespace {

struct TestLink {
  std::string name;
  std::string summary;
  std::string positional_key = {};
  bool bare_rate = false;
};

const Registry<TestLink>& links() {
  static Registry<TestLink> r("--link");
  r.add_if_absent({"paced", "paced by a rate", "rate", true});
  r.add_if_absent({"raw", "not paced"});
  return r;
}

TEST(LinkSpec, BareRatesAreTextsWithoutAKindName) {
  for (const char* bare : {"1Gbps,50us", "10Gbps", "-1Gbps", ",50us", "1Gbps,", "fast,50us", " 3GBps"})
    EXPECT_TRUE(is_bare_link_rate(bare)) << bare;
  for (const char* named : {"", "none", "emulated:1Gbps,50us", "file:2GBps", "fast", "pcie4"})
    EXPECT_FALSE(is_bare_link_rate(named)) << named;
}

TEST(LinkSpec, EveryFormOfARateReadsAlike) {
  for (const char* text : {"1Gbps,50us", "paced:1Gbps,50us", "paced:bandwidth=1Gbps,latency=50us", "PACED: bandwidth=1Gbps,latency=50us"}) {
    auto [entry, options] = parse_link(links(), text);
    EXPECT_EQ(entry->name, "paced") << text;
    const auto rate = read_link_rate(options, text);
    options.finish();
    ASSERT_TRUE(rate.has_value()) << text;
    EXPECT_DOUBLE_EQ(rate->bandwidth_bytes_per_s, 1.25e8) << text;
    EXPECT_DOUBLE_EQ(rate->latency_s, 50e-6) << text;
  }
  auto [raw, options] = parse_link(links(), "raw");
  EXPECT_EQ(raw->name, "raw");
  EXPECT_FALSE(read_link_rate(options, "raw").has_value());
  for (const char* bad : {"paced:rate=1Gbps,bandwidth=1Gbps", "paced:latency=50us", "1Gbps,fast"}) {
    auto [entry, reader] = parse_link(links(), bad);
    try {
      read_link_rate(reader, bad);
      ADD_FAILURE() << bad;
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("invalid --link '") + bad + "'"), std::string::npos) << e.what();
    }
  }
  try {
    parse_link(links(), "warp");
    ADD_FAILURE() << "warp";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("unknown --link 'warp' (known: paced, raw)"), std::string::npos) << e.what();
  }
}

TEST(LinkSpec, HelpListsEveryKindAndTheBareRate) {
  EXPECT_EQ(link_help(links()),
            "a spec KIND[:KEY=VALUE,...] or BANDWIDTH[,LATENCY] alone (= paced:BANDWIDTH[,LATENCY], e.g. 1Gbps,50us); "
            "KIND: paced (paced by a rate); raw (not paced)");
}

}  // namespace
}  // namespace ferry
