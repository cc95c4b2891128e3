#include "train/data/idx_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "core/error.h"
#include "train/data/gzip_file.h"

namespace ferry::train {
namespace {

namespace fs = std::filesystem;

class IdxFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ferry_idx_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

std::vector<std::uint8_t> ramp(std::size_t n) {
  std::vector<std::uint8_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>(i * 7 + 3);
  return v;
}

// Expects `fn` to throw exactly `Error` with a message containing `file` and `what`.
template <typename Error, typename Fn>
void expect_error(Fn fn, const std::string& file, const std::string& what) {
  try {
    fn();
    ADD_FAILURE() << "no exception; expected one naming " << file;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(file), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

TEST_F(IdxFileTest, RoundTripsGzipAndPlain) {
  const auto data = ramp(5 * 4 * 3);
  for (bool gz : {true, false}) {
    const std::string p = path(gz ? "a.idx.gz" : "a.idx");
    write_idx_file(p, {5, 4, 3}, data, gz);
    // The gzip file really is compressed (magic 1f 8b); the plain one starts with the magic.
    std::ifstream in(p, std::ios::binary);
    unsigned char head[2] = {};
    in.read(reinterpret_cast<char*>(head), 2);
    EXPECT_EQ(head[0], gz ? 0x1f : 0x00);
    IdxArray a = read_idx_file(p, kIdxImagesMagic);
    EXPECT_EQ(a.dims, (std::vector<std::int64_t>{5, 4, 3}));
    EXPECT_EQ(a.data, data);
    EXPECT_EQ(a.path, p);
  }
}

TEST_F(IdxFileTest, MissingFileIsIoError) {
  const std::string p = path("nope-images-idx3-ubyte.gz");
  expect_error<IoError>([&] { read_idx_file(p, kIdxImagesMagic); }, p, "no such file");
}

TEST_F(IdxFileTest, WrongMagicIsFormatErrorNamingBoth) {
  const std::string p = path("labels.gz");
  write_idx_file(p, {10}, ramp(10), true);
  expect_error<FormatError>([&] { read_idx_file(p, kIdxImagesMagic); }, p,
                            "wrong IDX magic 0x00000801, expected 0x00000803");
}

TEST_F(IdxFileTest, TruncatedDataIsFormatError) {
  const std::string full = path("full");
  write_idx_file(full, {4, 28, 28}, ramp(4 * 28 * 28), false);
  auto bytes = read_maybe_gzip(full);
  for (bool gz : {true, false}) {
    const std::string p = path(gz ? "cut.gz" : "cut");
    write_maybe_gzip(p, {bytes.begin(), bytes.end() - 100}, gz);
    expect_error<FormatError>([&] { read_idx_file(p, kIdxImagesMagic); }, p,
                              "truncated IDX data");
  }
  const std::string h = path("header");
  write_maybe_gzip(h, {bytes.begin(), bytes.begin() + 10}, false);
  expect_error<FormatError>([&] { read_idx_file(h, kIdxImagesMagic); }, h, "truncated IDX header");
}

TEST_F(IdxFileTest, TrailingBytesAreSizeMismatch) {
  const std::string full = path("full");
  write_idx_file(full, {3, 2, 2}, ramp(12), false);
  auto bytes = read_maybe_gzip(full);
  bytes.push_back(1);
  const std::string p = path("long.gz");
  write_maybe_gzip(p, bytes, true);
  expect_error<FormatError>([&] { read_idx_file(p, kIdxImagesMagic); }, p, "size mismatch");
}

// A 60 KiB gzip file that inflates to 64 MiB after a header announcing one 28 x 28 image was
// inflated whole before the header was checked; now reading stops a chunk past the announced size.
TEST_F(IdxFileTest, InflationStopsAtTheSizeTheHeaderAnnounces) {
  const std::string full = path("one");
  write_idx_file(full, {1, 28, 28}, ramp(784), false);
  auto bytes = read_maybe_gzip(full);
  bytes.resize(bytes.size() + (64u << 20), 0);
  const std::string p = path("bomb.gz");
  write_maybe_gzip(p, bytes, true);
  EXPECT_LT(fs::file_size(p), 1u << 20);
  expect_error<FormatError>([&] { read_idx_file(p, kIdxImagesMagic); }, p,
                            "size mismatch: more than the 800 bytes its header announces");
}

TEST_F(IdxFileTest, CutGzipStreamIsFormatError) {
  const std::string full = path("full.gz");
  write_idx_file(full, {50, 28, 28}, ramp(50 * 28 * 28), true);
  std::ifstream in(full, std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(in)), {});
  const std::string p = path("cut-stream.gz");
  std::ofstream(p, std::ios::binary).write(raw.data(), static_cast<std::streamsize>(raw.size() / 2));
  EXPECT_THROW(read_idx_file(p, kIdxImagesMagic), FormatError);
}

TEST_F(IdxFileTest, WriteRejectsSizeMismatch) {
  EXPECT_THROW(write_idx_file(path("x"), {2, 2}, ramp(3), false), InvalidArgument);
}

}  // namespace
}  // namespace ferry::train
