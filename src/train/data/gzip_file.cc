#include "train/data/gzip_file.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.h"

namespace ferry::train {
namespace {

// Move-only owner of a gzFile handle.
class GzHandle {
 public:
  GzHandle(const std::string& path, const char* mode) : file_(gzopen(path.c_str(), mode)) {}
  ~GzHandle() {
    if (file_) gzclose(file_);
  }
  GzHandle(const GzHandle&) = delete;
  GzHandle& operator=(const GzHandle&) = delete;
  gzFile get() const { return file_; }
  // Closes now and reports whether the close (the final flush when writing) succeeded.
  bool close() {
    const int rc = gzclose(file_);
    file_ = nullptr;
    return rc == Z_OK;
  }

 private:
  gzFile file_;
};

std::string gz_error_text(gzFile file) {
  int code = 0;
  const char* text = gzerror(file, &code);
  if (code == Z_ERRNO) return std::strerror(errno);
  return text ? text : "unknown zlib error";
}

}  // namespace

std::vector<std::uint8_t> read_maybe_gzip(const std::string& path, std::uint64_t max_bytes, std::size_t head_bytes,
                                          const ContentBound& bound) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) FERRY_THROW(IoError, path, ": no such file");
  if (std::filesystem::is_directory(path, ec))
    FERRY_THROW(IoError, path, ": is a directory, expected a file");
  errno = 0;
  GzHandle file(path, "rb");
  if (!file.get())
    FERRY_THROW(IoError, path, ": cannot open: ", errno ? std::strerror(errno) : "zlib error");
  gzbuffer(file.get(), 1 << 17);

  std::vector<std::uint8_t> bytes;
  constexpr std::size_t kChunk = 1 << 20;
  // Reads up to `want` more bytes; false at the end of the content.
  auto read_more = [&](std::size_t want) {
    const std::size_t old = bytes.size();
    bytes.resize(old + want);
    const int got = gzread(file.get(), bytes.data() + old, static_cast<unsigned>(want));
    if (got < 0)
      FERRY_THROW(FormatError, path, ": corrupt or truncated gzip data (", gz_error_text(file.get()), ")");
    bytes.resize(old + static_cast<std::size_t>(got));
    return got > 0;
  };
  bool more = true;
  if (bound) {  // the head (gzread returns fewer bytes than asked only at the end), then its bound
    while (more && bytes.size() < head_bytes) more = read_more(head_bytes - bytes.size());
    const std::uint64_t announced = bound(bytes);
    while (more && bytes.size() <= announced) more = read_more(kChunk);
    if (bytes.size() > announced)
      FERRY_THROW(FormatError, path, ": size mismatch: more than the ", announced, " bytes its header announces");
  }
  while (more && bytes.size() <= max_bytes) more = read_more(kChunk);
  if (bytes.size() > max_bytes)
    FERRY_THROW(FormatError, path, ": larger than the expected at most ", max_bytes, " bytes");
  // A gzip stream that ends early makes gzread return the partial data; the error shows here.
  int code = Z_OK;
  gzerror(file.get(), &code);
  if (code != Z_OK && code != Z_STREAM_END) {
    FERRY_THROW(FormatError, path, ": corrupt or truncated gzip data (",
                gz_error_text(file.get()), ")");
  }
  return bytes;
}

void write_maybe_gzip(const std::string& path, const std::vector<std::uint8_t>& bytes,
                      bool gzip) {
  errno = 0;
  GzHandle file(path, gzip ? "wb6" : "wbT");
  if (!file.get())
    FERRY_THROW(IoError, path, ": cannot create: ", errno ? std::strerror(errno) : "zlib error");
  std::size_t done = 0;
  while (done < bytes.size()) {
    const auto n = static_cast<unsigned>(std::min<std::size_t>(bytes.size() - done, 1 << 20));
    if (gzwrite(file.get(), bytes.data() + done, n) != static_cast<int>(n))
      FERRY_THROW(IoError, path, ": write failed: ", gz_error_text(file.get()));
    done += n;
  }
  if (!file.close()) FERRY_THROW(IoError, path, ": close failed");
}

}  // namespace ferry::train
