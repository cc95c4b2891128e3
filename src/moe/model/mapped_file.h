// RAII wrappers of a file descriptor and of a read-only memory mapping.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace ferry::moe {

// Owns a POSIX file descriptor; closes it on destruction. Move-only.
class FileDescriptor {
 public:
  FileDescriptor() = default;
  explicit FileDescriptor(int fd) : fd_(fd) {}
  // Opens `path` with `flags` (O_RDONLY, O_DIRECT, ...); throws IoError naming the path.
  static FileDescriptor open(const std::string& path, int flags);
  ~FileDescriptor();
  FileDescriptor(FileDescriptor&& other) noexcept : fd_(other.release()) {}
  FileDescriptor& operator=(FileDescriptor&& other) noexcept;
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }

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

 private:
  void unmap();

  const std::byte* data_ = nullptr;
  std::uint64_t size_ = 0;
  std::string path_;
};

}  // namespace ferry::moe
