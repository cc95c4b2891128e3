// MoE links: kinds on the core registry, the BANDWIDTH[,LATENCY] grammar shared with training's
// --link, and the capability (not the name) that refuses a link this build cannot make.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/hardware.h"
#include "moe/engine/engine.h"
#include "moe/sim/time_model.h"
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

// --link is a spec of the link registry: the key form, the positional form and the bare rate are
// one link; the shorthands read as emulated links at the hardware table's figures.
TEST(LinkRegistry, SpecFormsAndShorthandsAreOneGrammar) {
  for (const char* text : {"emulated:bandwidth=12GBps,latency=10us", "emulated:12GBps,10us", "12GBps,10us",
                           "EMULATED:bandwidth=12GBps, latency=10us"}) {
    const LinkSpec s = parse_link_spec(text);
    EXPECT_EQ(s.kind, "emulated") << text;
    EXPECT_DOUBLE_EQ(s.bandwidth_bytes_per_s, 12e9) << text;
    EXPECT_DOUBLE_EQ(s.latency_s, 10e-6) << text;
    EXPECT_EQ(s.text, text);
  }
  const LinkSpec file = parse_link_spec("file:bandwidth=2GBps,latency=50us");
  EXPECT_EQ(file.kind, "file");
  EXPECT_DOUBLE_EQ(file.latency_s, 50e-6);
  EXPECT_DOUBLE_EQ(parse_link_spec("file").bandwidth_bytes_per_s, 0);  // unpaced unless asked
  for (const hardware::HostLink& link : hardware::kHostLinks) {
    const LinkSpec s = parse_link_spec(std::string(link.name));
    EXPECT_EQ(s.kind, "emulated") << link.name;
    EXPECT_EQ(s.bandwidth_bytes_per_s, link.bandwidth_bytes_per_s) << link.name;
    EXPECT_EQ(s.latency_s, link.latency_s) << link.name;
  }
  EXPECT_EQ(parse_link_spec("mixtral-a100").scaled_ratio, parse_link_spec("scaled:62").scaled_ratio);
  EXPECT_EQ(parse_link_spec("scaled:ratio=10").scaled_ratio, 10);
  for (const char* bad : {"none:rate=1GBps", "pcie4:latency=1us", "emulated:bandwidth=1GBps,rate=2GBps",
                          "emulated:latency=10us", "file:speed=1GBps", "scaled"})
    EXPECT_THROW(parse_link_spec(bad), InvalidArgument) << bad;
  try {
    parse_link_spec("warp");
    ADD_FAILURE() << "warp accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("unknown --link 'warp'"), std::string::npos) << e.what();
  }
}

// --link's help is the registry's: every kind is listed.
TEST(LinkRegistry, HelpListsEveryKind) {
  const std::string help = link_help();
  for (const std::string& kind : link_kinds()) EXPECT_NE(help.find(kind + " ("), std::string::npos) << kind;
  EXPECT_NE(help.find("BANDWIDTH[,LATENCY] alone (= emulated:"), std::string::npos) << help;
}

// --compute is a spec: the key form, the positional form and DEVICE,HOST_PER_TOKEN alone are one
// profile; a bad one names --compute.
TEST(ComputeProfile, SpecFormsAreOneProfile) {
  for (const char* text : {"100us,1ms", "paced:100us,1ms", "paced:device_expert=100us,host_token=1ms",
                           "PACED:host_token=1ms, device_expert=100us"}) {
    const ComputeProfile p = parse_compute_profile(text);
    EXPECT_DOUBLE_EQ(p.device_expert_s, 100e-6) << text;
    EXPECT_DOUBLE_EQ(p.host_token_s, 1e-3) << text;
    EXPECT_EQ(p.name, text);
  }
  EXPECT_EQ(parse_compute_profile("none").device_expert_s, 0);
  EXPECT_EQ(parse_compute_profile("auto").name, "auto");
  for (const char* bad : {"fast", "100us", "100us,fast", "paced", "paced:100us", "paced:device_expert=100us",
                          "paced:100us,1ms,2ms", "a100:device_expert=1us", "none:x=1", "paced:100us,device_expert=1us"}) {
    try {
      parse_compute_profile(bad);
      ADD_FAILURE() << bad << " accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("--compute"), std::string::npos) << bad << ": " << e.what();
    }
  }
  const std::string help = compute_help();
  for (const char* kind : {"none (", "a100 (", "paced (", "auto ("}) EXPECT_NE(help.find(kind), std::string::npos) << kind;
}

// Whether the engine keeps a host copy is the entry's capability, not its name.
TEST(LinkRegistry, KeepingAHostCopyIsACapability) {
  register_builtin_links();
  EXPECT_FALSE(link_entry(parse_link_spec("file:2GBps").kind).keeps_host_copy);
  for (const char* text : {"pcie4", "none", "12GBps,10us", "mixtral-a100", "cuda"})
    EXPECT_TRUE(link_entry(parse_link_spec(text).kind).keeps_host_copy) << text;
}

// One hardware table: the simulator's profiles, the links' shorthands and the engine's a100
// compute profile read the same figures.
TEST(LinkRegistry, HardwareFiguresAgreeAcrossLinksSimulatorAndEngine) {
  const auto profiles = builtin_hardware_profiles();
  EXPECT_EQ(find_profile(profiles, "a100-pcie4").link_Bps, parse_link_spec("pcie4").bandwidth_bytes_per_s);
  EXPECT_EQ(find_profile(profiles, "a100-pcie4").link_latency_s, parse_link_spec("pcie4").latency_s);
  EXPECT_EQ(find_profile(profiles, "v100-pcie3").link_Bps, parse_link_spec("pcie3").bandwidth_bytes_per_s);
  EXPECT_EQ(find_profile(profiles, "rtx4090-pcie4").link_Bps, parse_link_spec("pcie4").bandwidth_bytes_per_s);
  const HardwareProfile& a100 = find_profile(profiles, "a100-pcie4");
  // The scaled link's ratio and the compute profile's host/device ratio are the A100 profile's
  // bandwidth ratios, rounded.
  EXPECT_EQ(kMixtralA100TransferRatio, std::round(a100.hbm_Bps / a100.link_Bps));
  const ComputeProfile c = parse_compute_profile("a100");
  EXPECT_DOUBLE_EQ(c.host_token_s / c.device_expert_s, std::round(a100.hbm_Bps / a100.host_Bps));
  EXPECT_EQ(kMixtralA100TransferRatio, 62);  // docs/moe.md, "The link ratio"
  EXPECT_DOUBLE_EQ(c.host_token_s, 1e-3);
}

}  // namespace
}  // namespace ferry::moe
