// memory_room(): MemAvailable, a cgroup v1 limit (hierarchical, less reclaimable page cache) and
// cgroup v2 limits up the path, read from a fake /proc and /sys/fs/cgroup.
#include "core/memory_room.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace ferry {
namespace {

class MemoryRoomTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() / ("ferry-memroom-" + std::to_string(::getpid()) + "-" +
                                                      ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(root_);
    paths_.meminfo = (root_ / "meminfo").string();
    paths_.self_cgroup = (root_ / "cgroup").string();
    paths_.cgroup_root = (root_ / "sys").string();
    write("meminfo", "MemTotal:       24683772 kB\nMemFree:  100 kB\nMemAvailable:   20000000 kB\n");
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  void write(const std::string& rel, const std::string& text) {
    const auto p = root_ / rel;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  std::filesystem::path root_;
  MemoryRoomPaths paths_;
};

TEST_F(MemoryRoomTest, MemAvailableWithoutACgroupLimit) {
  write("cgroup", "4:memory:/a\n0::/\n");
  write("sys/memory/a/memory.limit_in_bytes", "9223372036854771712\n");
  write("sys/memory/a/memory.usage_in_bytes", "1000\n");
  const MemoryRoom r = memory_room(paths_);
  EXPECT_EQ(r.bytes, 20000000ull * 1024);
  EXPECT_NE(r.source.find("MemAvailable"), std::string::npos) << r.source;
}

TEST_F(MemoryRoomTest, CgroupV1LimitLessUsageButNotInactiveFileCache) {
  write("cgroup", "9:name=systemd:/\n4:memory:/a/b\n0::/\n");
  // The parent's smaller limit holds: hierarchical_memory_limit says so.
  write("sys/memory/a/b/memory.limit_in_bytes", "9223372036854771712\n");
  write("sys/memory/a/b/memory.stat", "cache 500\nhierarchical_memory_limit 1600000000\ntotal_inactive_file 300000000\n");
  write("sys/memory/a/b/memory.usage_in_bytes", "700000000\n");
  const MemoryRoom r = memory_room(paths_);
  EXPECT_EQ(r.bytes, 1600000000ull - (700000000ull - 300000000ull));
  EXPECT_NE(r.source.find("cgroup v1"), std::string::npos) << r.source;
}

TEST_F(MemoryRoomTest, CgroupV2SmallestLimitUpThePath) {
  write("cgroup", "0::/x/y\n");
  write("sys/x/memory.max", "2000000000\n");
  write("sys/x/y/memory.max", "max\n");
  write("sys/x/y/memory.current", "500000000\n");
  write("sys/x/y/memory.stat", "anon 1\ninactive_file 100000000\n");
  const MemoryRoom r = memory_room(paths_);
  EXPECT_EQ(r.bytes, 2000000000ull - 400000000ull);
  EXPECT_NE(r.source.find("cgroup v2"), std::string::npos) << r.source;
  // A usage above the limit leaves nothing.
  write("sys/x/y/memory.current", "2500000000\n");
  EXPECT_EQ(memory_room(paths_).bytes, 0u);
}

TEST_F(MemoryRoomTest, NothingReadableSaysSo) {
  std::filesystem::remove(root_ / "meminfo");
  const MemoryRoom r = memory_room(paths_);
  EXPECT_EQ(r.bytes, 0u);
  EXPECT_NE(r.source.find("unknown"), std::string::npos);
}

}  // namespace
}  // namespace ferry
