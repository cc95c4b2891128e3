// Writing a file so that readers, and a crash at any moment, see either its old content or its
// complete new content, never a prefix: write PATH.part in the same directory, fsync it, rename
// it over PATH, fsync the directory (the rename itself is then durable). Used for checkpoints
// and for result files (summary.json).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace ferry {

// Replaces `path` atomically with `bytes` (created with mode 0666 less the umask, as an
// ofstream would). The directory must exist. Every failure (open, write, fsync, close, rename,
// directory fsync) is an IoError naming `path` and the reason; the temporary file is removed
// and `path` keeps its old content (or stays absent).
void write_file_atomic(const std::string& path, std::span<const std::byte> bytes);
void write_file_atomic(const std::string& path, std::string_view text);

// The temporary name write_file_atomic() writes before the rename (PATH.part).
std::string atomic_write_temp_path(const std::string& path);

// fsync of a directory, which makes renames and creations inside it durable. IoError naming it.
void sync_directory(const std::string& dir);

// rename(2) with an IoError naming both paths.
void rename_path(const std::string& from, const std::string& to);

// write_file_atomic() for a file written piece by piece (one too large to hold in memory): opens
// PATH.part, append() writes, commit() fsyncs, renames it over PATH and fsyncs the directory. A
// writer destroyed without commit() (an error on the way) removes PATH.part; PATH keeps its old
// content or stays absent. Errors are IoErrors naming PATH.part or PATH. Move-only.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::string path);
  ~AtomicFileWriter();
  AtomicFileWriter(AtomicFileWriter&& other) noexcept;
  AtomicFileWriter& operator=(AtomicFileWriter&&) = delete;
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void append(std::span<const std::byte> bytes);
  // Bytes appended so far.
  std::uint64_t size() const { return size_; }
  void commit();

 private:
  std::string path_;
  std::string part_;
  int fd_ = -1;  // owned: closed by commit() or the destructor
  std::uint64_t size_ = 0;
};

}  // namespace ferry
