// MoE links: kinds on the core registry, the BANDWIDTH[,LATENCY] grammar shared with training's
// --link, and the capability (not the name) that refuses a link this build cannot make.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/error.h"
#include "moe/store/link.h"

namespace ferry::moe {
namespace {

TEST(LinkRegistry, KindsAreListedAndTheRateGrammarIsTrainings) {
  register_builtin_links();
  const auto kinds = link_kinds();
  for (const char* k : {"emulated", "none", "file", "cuda"})
    EXPECT_NE(std::find(kinds.begin(), kinds.end(), k), kinds.end()) << k;
  const LinkSpec a = parse_link_spec("12GBps,10us");
  EXPECT_EQ(a.kind, "emulated");
  EXPECT_DOUBLE_EQ(a.bandwidth_bytes_per_s, 12e9);
  EXPECT_DOUBLE_EQ(a.latency_s, 10e-6);
  const LinkSpec b = parse_link_spec("3GBps");  // latency optional, as in `ferry train --link 10Gbps`
  EXPECT_DOUBLE_EQ(b.bandwidth_bytes_per_s, 3e9);
  EXPECT_DOUBLE_EQ(b.latency_s, 0);
  EXPECT_DOUBLE_EQ(parse_link_spec("file:2GBps,50us").latency_s, 50e-6);
  for (const char* bad : {"12GBps,10", "12GBps,10us,3", "emulated:fast", "scaled:x", "scaled:-2", "warp"})
    EXPECT_THROW(parse_link_spec(bad), InvalidArgument) << bad;
}

TEST(LinkRegistry, ScaledLinksResolveAndUnavailableKindsAreRefused) {
  register_builtin_links();
  const LinkSpec s = resolve_scaled_link("scaled:10", 1000, 1e-3);
  EXPECT_EQ(s.kind, "emulated");
  EXPECT_NEAR(1000 / s.bandwidth_bytes_per_s + s.latency_s, 10e-3, 1e-12);
  EXPECT_EQ(resolve_scaled_link("pcie4", 1000, 1e-3).bandwidth_bytes_per_s, 25e9);
  EXPECT_THROW(make_link(parse_link_spec("mixtral-a100"), {}), InvalidArgument);  // not resolved
  // Once resolved, a scaled link is an ordinary one: make_link builds it (ferry moe bench and demo
  // use the default mixtral-a100 this way).
  for (const char* scaled : {"mixtral-a100", "scaled:10"}) {
    const LinkSpec r = resolve_scaled_link(scaled, 1000, 1e-3);
    EXPECT_LE(r.scaled_ratio, 0) << scaled;
    try {
      make_link(r, {});  // no host pool here: the emulated link's own check is the one that fails
      ADD_FAILURE() << scaled << ": an emulated link without a host pool";
    } catch (const std::exception& e) {
      EXPECT_STREQ(e.what(), "the emulated link needs the host pool") << scaled;
    }
  }
  LinkSpec unknown;
  unknown.kind = "warp";
  EXPECT_THROW(make_link(unknown, {}), InvalidArgument);
  if (!find_link("cuda")->unavailable.empty()) {  // a build without a CUDA libtorch
    try {
      make_link(parse_link_spec("cuda"), {});
      ADD_FAILURE() << "cuda link made without CUDA";
    } catch (const InvalidArgument& e) {
      EXPECT_STREQ(e.what(), "--link cuda: this ferry was built without a CUDA libtorch");
    }
  }
  EXPECT_THROW(register_link({"emulated", "again", "", nullptr}), InvalidArgument);
}

}  // namespace
}  // namespace ferry::moe
