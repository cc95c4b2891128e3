#include "train/data/cifar10_loader.h"

#include <filesystem>

#include "core/error.h"
#include "train/data/gzip_file.h"

namespace ferry::train {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kImageBytes = 3 * 32 * 32;
constexpr std::size_t kRecordBytes = 1 + kImageBytes;

std::string find_batch(const fs::path& dir, const std::string& stem) {
  for (const auto& name : {stem + ".bin", stem + ".bin.gz"}) {
    std::error_code ec;
    if (fs::is_regular_file(dir / name, ec)) return (dir / name).string();
  }
  FERRY_THROW(IoError, dir.string(), ": no CIFAR-10 file ", stem, ".bin (or ", stem, ".bin.gz)");
}

}  // namespace

Dataset load_cifar10(const Cifar10Options& options) {
  FERRY_REQUIRE_OP(options.limit, >=, 0, "CIFAR-10 limit");
  fs::path dir = options.dir;
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    FERRY_THROW(IoError, options.dir, ": no such directory (expected CIFAR-10 binary files)");
  if (fs::is_directory(dir / "cifar-10-batches-bin", ec)) dir /= "cifar-10-batches-bin";

  std::vector<std::string> stems;
  if (options.split == Split::kTrain) {
    for (int i = 1; i <= 5; ++i) stems.push_back("data_batch_" + std::to_string(i));
  } else {
    stems.push_back("test_batch");
  }
  std::vector<std::uint8_t> pixels, labels;
  for (const auto& stem : stems) {
    const std::string path = find_batch(dir, stem);
    const std::vector<std::uint8_t> bytes = read_maybe_gzip(path, std::uint64_t{1} << 32);
    if (bytes.empty() || bytes.size() % kRecordBytes != 0) {
      FERRY_THROW(FormatError, path, ": ", bytes.size(),
                  " bytes, expected a positive multiple of the ", kRecordBytes,
                  "-byte CIFAR-10 record");
    }
    for (std::size_t off = 0; off < bytes.size(); off += kRecordBytes) {
      if (bytes[off] > 9)
        FERRY_THROW(FormatError, path, ": label ", int(bytes[off]), " of record ",
                    off / kRecordBytes, " is outside [0, 10)");
      labels.push_back(bytes[off]);
      pixels.insert(pixels.end(), bytes.begin() + static_cast<std::ptrdiff_t>(off + 1),
                    bytes.begin() + static_cast<std::ptrdiff_t>(off + kRecordBytes));
    }
    if (options.limit > 0 && static_cast<std::int64_t>(labels.size()) >= options.limit) break;
  }
  if (options.limit > 0 && static_cast<std::int64_t>(labels.size()) > options.limit) {
    labels.resize(static_cast<std::size_t>(options.limit));
    pixels.resize(labels.size() * kImageBytes);
  }
  const std::string name =
      std::string("cifar10/") + (options.split == Split::kTrain ? "train" : "test");
  return make_dataset_from_bytes(name, pixels, labels, 3, 32, 32, 10, options.norm);
}

}  // namespace ferry::train
