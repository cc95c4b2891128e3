#include "core/atomic_write.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "core/error.h"
#include "message_of.h"

namespace ferry {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

fs::path fresh_dir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("ferry_atomic_write_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}


TEST(AtomicWrite, WritesTheBytesAndLeavesNoTemporary) {
  const fs::path dir = fresh_dir("ok");
  const std::string path = (dir / "a.bin").string();
  std::string data(100000, '\0');
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 7);
  write_file_atomic(path, data);
  EXPECT_EQ(slurp(path), data);
  EXPECT_FALSE(fs::exists(atomic_write_temp_path(path)));
  write_file_atomic(path, std::string("short"));  // replaces, never appends or keeps a tail
  EXPECT_EQ(slurp(path), "short");
  write_file_atomic(path, std::string());
  EXPECT_TRUE(fs::exists(path));
  EXPECT_EQ(fs::file_size(path), 0u);
  fs::remove_all(dir);
}

TEST(AtomicWrite, MissingDirectoryIsIoErrorNamingThePath) {
  const fs::path dir = fresh_dir("missing");
  const std::string path = (dir / "no" / "such" / "summary.json").string();
  const std::string what = message_of<IoError>([&] { write_file_atomic(path, std::string("x")); });
  EXPECT_NE(what.find(path), std::string::npos) << what;
  EXPECT_FALSE(fs::exists(dir / "no"));
  fs::remove_all(dir);
}

// /proc refuses new files even to root.
TEST(AtomicWrite, DirectoryRefusingFilesIsIoErrorNamingThePath) {
  const std::string path = "/proc/ferry_cannot_write_here.json";
  const std::string what = message_of<IoError>([&] { write_file_atomic(path, std::string("x")); });
  EXPECT_NE(what.find(path), std::string::npos) << what;
  EXPECT_FALSE(fs::exists(path));
}

TEST(AtomicWrite, ReadOnlyDirectoryIsIoErrorNamingThePath) {
  if (::geteuid() == 0) GTEST_SKIP() << "root writes into read-only directories (see DirectoryRefusingFiles...)";
  const fs::path dir = fresh_dir("readonly");
  ASSERT_EQ(::chmod(dir.c_str(), 0500), 0);
  const std::string path = (dir / "summary.json").string();
  const std::string what = message_of<IoError>([&] { write_file_atomic(path, std::string("x")); });
  EXPECT_NE(what.find(path), std::string::npos) << what;
  EXPECT_FALSE(fs::exists(path));
  ::chmod(dir.c_str(), 0700);
  fs::remove_all(dir);
}

// A failed write leaves the old content whole: here the temporary cannot be created (a
// directory is in its place), as when the disk refuses it.
TEST(AtomicWrite, FailureKeepsTheOldContent) {
  const fs::path dir = fresh_dir("keep");
  const std::string path = (dir / "state").string();
  write_file_atomic(path, std::string("old content"));
  fs::create_directory(atomic_write_temp_path(path));
  const std::string what = message_of<IoError>([&] { write_file_atomic(path, std::string("new")); });
  EXPECT_NE(what.find(path), std::string::npos) << what;
  EXPECT_EQ(slurp(path), "old content");
  EXPECT_TRUE(fs::is_directory(atomic_write_temp_path(path)));  // not ours: left alone
  fs::remove_all(dir);
}

// The rename fails (the destination is a non-empty directory): IoError naming it, the
// destination is untouched and the temporary is removed.
TEST(AtomicWrite, FailedRenameRemovesTheTemporary) {
  const fs::path dir = fresh_dir("rename");
  const fs::path dest = dir / "taken";
  fs::create_directories(dest / "inside");
  const std::string what = message_of<IoError>([&] { write_file_atomic(dest.string(), std::string("x")); });
  EXPECT_NE(what.find(dest.string()), std::string::npos) << what;
  EXPECT_TRUE(fs::is_directory(dest / "inside"));
  EXPECT_FALSE(fs::exists(atomic_write_temp_path(dest.string())));
  fs::remove_all(dir);
}

TEST(AtomicWrite, SyncDirectoryAndRenameNameTheirPaths) {
  const fs::path dir = fresh_dir("names");
  const std::string missing = (dir / "gone").string();
  EXPECT_NE(message_of<IoError>([&] { sync_directory(missing); }).find(missing), std::string::npos);
  EXPECT_NE(message_of<IoError>([&] { rename_path(missing, missing + "2"); }).find(missing), std::string::npos);
  sync_directory(dir.string());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ferry
