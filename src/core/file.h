// Move-only RAII owners of the two POSIX file handles ferry uses: a file descriptor and a
// read-only memory mapping of a whole file. Every error is an IoError naming the path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace ferry {

// Owns a POSIX file descriptor; closes it on destruction. Move-only.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  // Opens `path` with `flags` (O_RDONLY, O_WRONLY | O_CREAT, O_DIRECT, ...; O_CLOEXEC is always
  // added) and `mode` for a created file; throws IoError naming the path and errno's reason.
  static UniqueFd open(const std::string& path, int flags, unsigned mode = 0666);
  // As open(), but returns an invalid UniqueFd (errno set) instead of throwing, for callers
  // with a fallback (O_DIRECT, then buffered).
  static UniqueFd try_open(const std::string& path, int flags, unsigned mode = 0666);
  ~UniqueFd();
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Gives up ownership without closing.
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  // Closes now and reports the result: close() can report a deferred write error (NFS, quota),
  // which the destructor would have to drop. IoError naming `path` on failure.
  void close(const std::string& path);

 private:
  int fd_ = -1;
};

// A whole file mapped read-only (an empty file maps to size 0 and data nullptr). Move-only.
class MappedFile {
 public:
  MappedFile() = default;
  // Maps `path`; throws IoError naming the path when it cannot be opened or mapped.
  static MappedFile open(const std::string& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::byte* data() const { return data_; }
  std::uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Drops the pages this mapping holds (they fault in again when read) and asks the kernel to
  // evict the file's cached pages: once a model's dense weights are copied out, the mapping of a
  // file larger than memory should hold none of it. Contents are unchanged.
  void release_pages() const;

 private:
  void unmap();

  const std::byte* data_ = nullptr;
  std::uint64_t size_ = 0;
  std::string path_;
};

}  // namespace ferry
