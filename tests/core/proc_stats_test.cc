// The kernel's counts of this process: the peak resident set follows memory the test touches and
// is reset on request; a read the page cache cannot serve (O_DIRECT) is counted as a storage read.
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include <gtest/gtest.h>

#include "core/proc_stats.h"

namespace ferry {
namespace {

TEST(ProcStats, PeakRssFollowsTouchedMemoryAndResets) {
  if (process_peak_rss_bytes() == 0) GTEST_SKIP() << "no /proc/self/status";
  const std::uint64_t before = process_peak_rss_bytes();
  constexpr std::size_t kBytes = 64u << 20;
  {
    std::vector<char> block(kBytes);
    std::memset(block.data(), 1, kBytes);  // resident, page by page
    EXPECT_GE(process_peak_rss_bytes(), before + kBytes / 2);
  }
  if (!reset_peak_rss()) GTEST_SKIP() << "the kernel refused clear_refs";
  // Freed (a block this large is unmapped), so the reset peak is near the current set again.
  EXPECT_LT(process_peak_rss_bytes(), before + kBytes / 2);
}

TEST(ProcStats, DirectReadsAreStorageReads) {
  const auto path = std::filesystem::temp_directory_path() / ("ferry-proc-stats-" + std::to_string(getpid()));
  constexpr std::size_t kBytes = 8u << 20;
  {
    std::ofstream out(path, std::ios::binary);
    std::vector<char> data(kBytes, 7);
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECT);
  if (fd < 0 || (process_storage_read_bytes() == 0 && access("/proc/self/io", R_OK) != 0)) {
    if (fd >= 0) ::close(fd);
    std::filesystem::remove(path);
    GTEST_SKIP() << "no O_DIRECT on " << path.parent_path() << " or no /proc/self/io";
  }
  void* buf = nullptr;
  ASSERT_EQ(posix_memalign(&buf, 4096, kBytes), 0);
  const std::uint64_t before = process_storage_read_bytes();
  const ssize_t got = ::pread(fd, buf, kBytes, 0);
  const std::uint64_t after = process_storage_read_bytes();
  ::close(fd);
  std::free(buf);
  std::filesystem::remove(path);
  ASSERT_EQ(got, static_cast<ssize_t>(kBytes));
  EXPECT_GE(after - before, kBytes);  // just written, so in the page cache: only a direct read reaches the disk
}

}  // namespace
}  // namespace ferry
