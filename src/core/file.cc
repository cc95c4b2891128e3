#include "core/file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"
#include "core/path_checks.h"

namespace ferry {

UniqueFd UniqueFd::try_open(const std::string& path, int flags, unsigned mode) {
  int fd;
  do {
    fd = ::open(path.c_str(), flags | O_CLOEXEC, static_cast<mode_t>(mode));
  } while (fd < 0 && errno == EINTR);
  return UniqueFd(fd);
}

UniqueFd UniqueFd::open(const std::string& path, int flags, unsigned mode) {
  UniqueFd fd = try_open(path, flags, mode);
  if (!fd.valid()) FERRY_THROW(IoError, "cannot open '", path, "': ", std::strerror(errno));
  return fd;
}

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) ::close(fd_);  // nothing to report to from a destructor; see close()
}

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

void UniqueFd::close(const std::string& path) {
  // The descriptor is gone after close() whatever it returns (Linux), so never retry it.
  if (fd_ < 0) return;
  const int rc = ::close(release());
  if (rc != 0 && errno != EINTR) FERRY_THROW(IoError, "cannot close '", path, "': ", std::strerror(errno));
}

MappedFile MappedFile::open(const std::string& path) {
  // Before open(2): a FIFO would block it until a writer comes, and a device maps as garbage.
  require_regular_file(path, "file");
  UniqueFd fd = UniqueFd::open(path, O_RDONLY);
  struct stat st{};
  if (::fstat(fd.get(), &st) != 0) FERRY_THROW(IoError, "cannot stat '", path, "': ", std::strerror(errno));
  if (S_ISDIR(st.st_mode)) FERRY_THROW(IoError, "'", path, "' is a directory, expected a file");
  MappedFile m;
  m.path_ = path;
  m.size_ = static_cast<std::uint64_t>(st.st_size);
  if (m.size_ > 0) {
    void* p = ::mmap(nullptr, m.size_, PROT_READ, MAP_PRIVATE, fd.get(), 0);
    if (p == MAP_FAILED) FERRY_THROW(IoError, "cannot mmap '", path, "': ", std::strerror(errno));
    m.data_ = static_cast<const std::byte*>(p);
  }
  return m;  // the mapping stays valid after the descriptor closes
}

MappedFile::~MappedFile() { unmap(); }

void MappedFile::release_pages() const {
  if (data_ == nullptr) return;
  // Advice only: a kernel that refuses it leaves the pages where they are, nothing else changes.
  ::madvise(const_cast<std::byte*>(data_), size_, MADV_DONTNEED);
  UniqueFd fd = UniqueFd::try_open(path_, O_RDONLY);
  if (fd.valid()) ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(other.data_), size_(other.size_), path_(std::move(other.path_)) {
  other.data_ = nullptr;
  other.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    unmap();
    data_ = other.data_;
    size_ = other.size_;
    path_ = std::move(other.path_);
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

void MappedFile::unmap() {
  if (data_) ::munmap(const_cast<std::byte*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace ferry
