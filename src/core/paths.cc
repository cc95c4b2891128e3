#include "core/paths.h"

#include <cstdlib>
#include <filesystem>
#include <vector>

namespace ferry {

namespace fs = std::filesystem;

std::string find_upward(const std::string& relative, bool directory) {
  std::vector<fs::path> roots;
  if (const char* src = std::getenv("FERRY_SOURCE_DIR")) roots.emplace_back(src);
  std::error_code ec;
  for (fs::path p = fs::current_path(ec); !p.empty(); p = p.parent_path()) {
    roots.push_back(p);
    if (p == p.parent_path()) break;
  }
  for (const auto& r : roots) {
    const fs::path cand = r / relative;
    if (directory ? fs::is_directory(cand, ec) : fs::is_regular_file(cand, ec))
      return fs::weakly_canonical(cand, ec).string();
  }
  return "";
}

}  // namespace ferry
