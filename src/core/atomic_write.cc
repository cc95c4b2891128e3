#include "core/atomic_write.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <utility>

#include "core/error.h"
#include "core/file.h"

namespace ferry {
namespace {

std::string parent_dir(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

void write_all(int fd, std::span<const std::byte> bytes, const std::string& path) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) FERRY_THROW(IoError, "cannot write '", path, "': ", std::strerror(errno));
    if (n == 0) FERRY_THROW(IoError, "cannot write '", path, "': no progress (device full?)");
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace

std::string atomic_write_temp_path(const std::string& path) { return path + ".part"; }

void sync_directory(const std::string& dir) {
  UniqueFd fd = UniqueFd::open(dir, O_RDONLY | O_DIRECTORY);
  if (::fsync(fd.get()) != 0) FERRY_THROW(IoError, "cannot fsync directory '", dir, "': ", std::strerror(errno));
  fd.close(dir);
}

void rename_path(const std::string& from, const std::string& to) {
  if (std::rename(from.c_str(), to.c_str()) != 0)
    FERRY_THROW(IoError, "cannot rename '", from, "' to '", to, "': ", std::strerror(errno));
}

void write_file_atomic(const std::string& path, std::span<const std::byte> bytes) {
  // Every message names PATH.part or PATH, so it names the file being written.
  const std::string part = atomic_write_temp_path(path);
  UniqueFd fd = UniqueFd::try_open(part, O_WRONLY | O_CREAT | O_TRUNC);
  if (!fd.valid()) FERRY_THROW(IoError, "cannot create '", part, "': ", std::strerror(errno));
  try {
    write_all(fd.get(), bytes, part);
    if (::fsync(fd.get()) != 0) FERRY_THROW(IoError, "cannot fsync '", part, "': ", std::strerror(errno));
    fd.close(part);
    rename_path(part, path);
  } catch (const IoError&) {
    std::error_code ec;
    std::filesystem::remove(part, ec);  // ours (created above); best effort, `path` is untouched
    throw;
  }
  sync_directory(parent_dir(path));
}

AtomicFileWriter::AtomicFileWriter(std::string path) : path_(std::move(path)), part_(atomic_write_temp_path(path_)) {
  UniqueFd fd = UniqueFd::try_open(part_, O_WRONLY | O_CREAT | O_TRUNC);
  if (!fd.valid()) FERRY_THROW(IoError, "cannot create '", part_, "': ", std::strerror(errno));
  fd_ = fd.release();
}

AtomicFileWriter::AtomicFileWriter(AtomicFileWriter&& other) noexcept
    : path_(std::move(other.path_)), part_(std::move(other.part_)), fd_(other.fd_), size_(other.size_) {
  other.fd_ = -1;
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ < 0) return;
  ::close(fd_);
  std::error_code ec;
  std::filesystem::remove(part_, ec);  // ours (created by the constructor); best effort
}

void AtomicFileWriter::append(std::span<const std::byte> bytes) {
  FERRY_CHECK(fd_ >= 0, "append after commit to '", path_, "'");
  write_all(fd_, bytes, part_);
  size_ += bytes.size();
}

void AtomicFileWriter::commit() {
  FERRY_CHECK(fd_ >= 0, "commit twice to '", path_, "'");
  if (::fsync(fd_) != 0) FERRY_THROW(IoError, "cannot fsync '", part_, "': ", std::strerror(errno));
  UniqueFd fd(fd_);
  fd_ = -1;
  try {
    fd.close(part_);
    rename_path(part_, path_);
  } catch (const IoError&) {
    std::error_code ec;
    std::filesystem::remove(part_, ec);
    throw;
  }
  sync_directory(parent_dir(path_));
}

void write_file_atomic(const std::string& path, std::string_view text) {
  write_file_atomic(path, std::as_bytes(std::span<const char>(text.data(), text.size())));
}

}  // namespace ferry
