#include "core/metrics.h"

#include <filesystem>
#include <system_error>

#include <nlohmann/json.hpp>

#include "core/atomic_write.h"
#include "core/error.h"

namespace ferry {

void make_dirs(const std::string& dir) {
  if (dir.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) FERRY_THROW(IoError, "cannot create directory '", dir, "': ", ec.message());
}

namespace {
void make_parent(const std::string& path) {
  make_dirs(std::filesystem::path(path).parent_path().string());
}
}  // namespace

JsonlWriter::JsonlWriter(const std::string& path) : path_(path) {
  make_parent(path);
  out_.open(path, std::ios::trunc);
  if (!out_) FERRY_THROW(IoError, "cannot open '", path, "' for writing");
}

void JsonlWriter::write(const nlohmann::json& record) {
  out_ << record.dump() << '\n';
  out_.flush();
  if (!out_) FERRY_THROW(IoError, "write to '", path_, "' failed");
}

void write_json_file(const std::string& path, const nlohmann::json& value) {
  make_parent(path);
  write_file_atomic(path, value.dump(2) + "\n");  // a reader never sees half a summary
}

}  // namespace ferry
