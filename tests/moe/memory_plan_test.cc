// plan_memory(): the expert budget from the memory this process may use (memory_plan.h).
#include "moe/engine/memory_plan.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "moe/engine/engine_specs.h"

namespace ferry::moe {
namespace {

constexpr std::uint64_t kMiB = 1 << 20;

MemoryNeeds needs() {
  MemoryNeeds n;
  n.expert_bytes = 10 * kMiB;
  n.total_expert_bytes = 64 * n.expert_bytes;  // 640 MiB
  n.min_budget_bytes = 2 * n.expert_bytes;
  n.kv_bytes = 50 * kMiB;
  n.workspace_bytes = 300 * kMiB;
  return n;
}

MemoryRoom room(std::uint64_t mib) { return {mib * kMiB, "test"}; }

TEST(MemoryPlan, AutoIsResidentWhenEverythingFits) {
  const MemoryPlan p = plan_memory("auto", needs(), room(640 + 50 + 300));
  EXPECT_TRUE(p.resident);
  EXPECT_EQ(p.budget_bytes, 640 * kMiB);
  EXPECT_NE(p.summary.find("every expert resident"), std::string::npos) << p.summary;
}

TEST(MemoryPlan, AutoTakesTheWholeExpertsThatFitBesideEverythingElse) {
  MemoryNeeds n = needs();
  n.host_copy_bytes = 100 * kMiB;
  // 800 - 100 host copy - 50 KV - 300 workspace = 350 MiB: 35 experts.
  const MemoryPlan p = plan_memory("auto", n, room(800));
  EXPECT_FALSE(p.resident);
  EXPECT_EQ(p.budget_bytes, 350 * kMiB);
  n.dense_bytes = 5 * kMiB;  // 345 MiB: 34 whole experts
  EXPECT_EQ(plan_memory("auto", n, room(800)).budget_bytes, 340 * kMiB);
}

TEST(MemoryPlan, RefusesWhatCannotFitNamingWhatWould) {
  // 370 MiB leave 20 MiB: exactly one layer's active experts (auto), but not 50 % (320 MiB).
  EXPECT_EQ(plan_memory("auto", needs(), room(370)).budget_bytes, 20 * kMiB);
  try {
    plan_memory("50%", needs(), room(370));
    FAIL() << "50% fitted in 20 MiB";
  } catch (const InvalidArgument& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("--device-mem 50%"), std::string::npos) << m;
    EXPECT_NE(m.find("does not fit"), std::string::npos) << m;
    EXPECT_NE(m.find("at most 20 MiB"), std::string::npos) << m;
  }
  EXPECT_EQ(plan_memory("20MiB", needs(), room(370)).budget_bytes, 20 * kMiB);
  EXPECT_THROW(plan_memory("auto", needs(), room(360)), InvalidArgument);  // below two experts
  EXPECT_THROW(plan_memory("auto", needs(), room(0)), InvalidArgument);
  EXPECT_THROW(plan_memory("bogus", needs(), room(4096)), InvalidArgument);
}

// --device-mem: auto, bytes in core/units.h's sizes, or a percentage of all experts; a bad value
// names the flag.
TEST(MemoryPlan, DeviceMemIsAutoBytesOrAPercentage) {
  EXPECT_TRUE(parse_device_mem("auto").automatic);
  EXPECT_EQ(parse_device_mem("256MiB").budget_bytes(1000), 256 * kMiB);
  EXPECT_EQ(parse_device_mem("0").budget_bytes(1000), 0u);
  EXPECT_EQ(parse_device_mem("30%").budget_bytes(1000), 300u);
  EXPECT_EQ(parse_device_mem("100%").budget_bytes(640 * kMiB), 640 * kMiB);
  for (const char* bad : {"150%", "0%", "abc%", "-5%", "%", "abc", "12parsecs", ""}) {
    try {
      parse_device_mem(bad);
      ADD_FAILURE() << bad << " accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("invalid --device-mem '") + bad + "'"), std::string::npos)
          << e.what();
    }
  }
}

TEST(MemoryPlan, WorkspaceGrowsWithTheStep) {
  const std::uint64_t one = step_workspace_bytes(1, 4096, 4096, 14336, 32, 32000);
  const std::uint64_t chunk = step_workspace_bytes(512, 4096, 4096, 14336, 32, 32000);
  EXPECT_EQ(one, 4ull * (8 * 4096 + 3 * 14336 + 32 + 32000) + 32 * kMiB);
  // 512 tokens: 4 bytes x (511 x (8 x 4096 + 3 x 14336 + 32000) + 32 x (512 x 512 - 1)) more.
  EXPECT_EQ(chunk - one, 4ull * 511 * (8 * 4096 + 3 * 14336 + 32000) + 4ull * 32 * (512 * 512 - 1));
}

}  // namespace
}  // namespace ferry::moe
