// JSONL metrics writer: one JSON object per line, flushed per record so a crash loses little.
#pragma once

#include <fstream>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace ferry {

class JsonlWriter {
 public:
  // Opens (truncates) `path`, creating parent directories. Throws IoError on failure.
  explicit JsonlWriter(const std::string& path);
  void write(const nlohmann::json& record);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::ofstream out_;
};

// Writes `value` pretty-printed to `path` (parents created), atomically (write_file_atomic).
// Throws IoError naming the path on failure.
void write_json_file(const std::string& path, const nlohmann::json& value);
// Creates `dir` and its parents; throws IoError naming the path on failure.
void make_dirs(const std::string& dir);

}  // namespace ferry
