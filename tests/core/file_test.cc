#include "core/file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <type_traits>
#include <utility>

#include "core/error.h"

namespace ferry {
namespace {

namespace fs = std::filesystem;

static_assert(!std::is_copy_constructible_v<UniqueFd> && std::is_nothrow_move_constructible_v<UniqueFd>);
static_assert(!std::is_copy_constructible_v<MappedFile> && std::is_nothrow_move_constructible_v<MappedFile>);

bool fd_open(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

TEST(UniqueFd, ClosesOnDestructionAndMovesOwnership) {
  int raw = -1;
  {
    UniqueFd a = UniqueFd::open("/dev/null", O_RDONLY);
    raw = a.get();
    ASSERT_TRUE(fd_open(raw));
    UniqueFd b(std::move(a));
    EXPECT_FALSE(a.valid());
    EXPECT_EQ(b.get(), raw);
    UniqueFd c;
    c = std::move(b);
    EXPECT_EQ(c.get(), raw);
    EXPECT_TRUE(fd_open(raw));
  }
  EXPECT_FALSE(fd_open(raw));
}

TEST(UniqueFd, OpenFailureIsIoErrorNamingThePathTryOpenIsNot) {
  const std::string path = "/nonexistent-ferry-dir/file";
  try {
    UniqueFd::open(path, O_RDONLY);
    FAIL() << "no IoError";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  EXPECT_FALSE(UniqueFd::try_open(path, O_RDONLY).valid());
}

TEST(UniqueFd, ExplicitCloseReleases) {
  UniqueFd a = UniqueFd::open("/dev/null", O_RDONLY);
  const int raw = a.get();
  a.close("/dev/null");
  EXPECT_FALSE(a.valid());
  EXPECT_FALSE(fd_open(raw));
  a.close("/dev/null");  // closing an empty one does nothing
}

TEST(MappedFile, MapsTheBytesAndEmptyFiles) {
  const fs::path dir = fs::temp_directory_path() / ("ferry_mapped_file_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  { std::ofstream(dir / "f") << "hello"; }
  { std::ofstream(dir / "empty"); }
  MappedFile m = MappedFile::open((dir / "f").string());
  ASSERT_EQ(m.size(), 5u);
  EXPECT_EQ(std::memcmp(m.data(), "hello", 5), 0);
  MappedFile moved = std::move(m);
  EXPECT_EQ(m.data(), nullptr);
  EXPECT_EQ(std::memcmp(moved.data(), "hello", 5), 0);
  MappedFile e = MappedFile::open((dir / "empty").string());
  EXPECT_EQ(e.size(), 0u);
  EXPECT_EQ(e.data(), nullptr);
  EXPECT_THROW(MappedFile::open(dir.string()), IoError);  // a directory
  EXPECT_THROW(MappedFile::open((dir / "absent").string()), IoError);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ferry
