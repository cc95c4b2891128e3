#include "core/path_checks.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include <filesystem>

#include "core/error.h"
#include "core/excerpt.h"

namespace ferry {

namespace fs = std::filesystem;

namespace {

const char* kind_of(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

}  // namespace

std::string file_kind(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) return "";
  return kind_of(st.st_mode);
}

void require_regular_file(const std::string& path, const std::string& what) {
  const std::string kind = file_kind(path);
  if (kind.empty()) FERRY_THROW(IoError, what, " '", excerpt(path), "' does not exist");
  if (kind != "a regular file") FERRY_THROW(IoError, what, " '", excerpt(path), "' is not a regular file (", kind, ")");
}

void require_program(const std::string& program, const std::string& what) {
  FERRY_REQUIRE(!program.empty(), what, " is empty");
  const auto executable = [](const std::string& p) {
    struct stat st{};
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
  };
  if (program.find('/') == std::string::npos) {
    const char* path = std::getenv("PATH");
    std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
    for (std::size_t begin = 0; begin <= dirs.size();) {
      std::size_t end = dirs.find(':', begin);
      if (end == std::string::npos) end = dirs.size();
      const std::string dir = end > begin ? dirs.substr(begin, end - begin) : ".";
      if (executable(dir + "/" + program)) return;
      begin = end + 1;
    }
    FERRY_THROW(InvalidArgument, what, " '", excerpt(program), "' was not found in PATH");
  }
  const std::string kind = file_kind(program);
  if (kind.empty()) FERRY_THROW(InvalidArgument, what, " '", excerpt(program), "' does not exist");
  if (kind != "a regular file")
    FERRY_THROW(InvalidArgument, what, " '", excerpt(program), "' is not a regular file (", kind, ")");
  if (::access(program.c_str(), X_OK) != 0)
    FERRY_THROW(InvalidArgument, what, " '", excerpt(program), "' is not executable");
}

std::vector<std::string> input_files(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    std::vector<std::string> files;
    for (auto it = fs::directory_iterator(path, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
      if (it->is_regular_file(ec)) files.push_back(it->path().string());
    return files;
  }
  if (fs::exists(path, ec)) return {path};
  return {};
}

void require_output_not_input(const std::string& out, const std::string& out_flag,
                              const std::vector<std::string>& inputs, const std::string& in_flag) {
  struct stat out_st{};
  const bool out_exists = ::stat(out.c_str(), &out_st) == 0;
  std::error_code ec;
  const fs::path out_path = fs::weakly_canonical(out, ec);
  for (const std::string& in : inputs) {
    struct stat in_st{};
    bool same = false;
    if (out_exists && ::stat(in.c_str(), &in_st) == 0) {
      same = out_st.st_dev == in_st.st_dev && out_st.st_ino == in_st.st_ino;
    } else if (!ec) {
      std::error_code ec_in;
      const fs::path in_path = fs::weakly_canonical(in, ec_in);
      same = !ec_in && in_path == out_path;
    }
    if (same)
      FERRY_THROW(InvalidArgument, out_flag, " '", excerpt(out), "' is the input file '", excerpt(in), "' (", in_flag,
                  "): writing it would destroy the input; choose another path");
  }
}

}  // namespace ferry
