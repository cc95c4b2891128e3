#include "core/corpus.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "core/error.h"
#include "core/path_checks.h"

namespace ferry {

namespace fs = std::filesystem;

std::string read_corpus(const std::string& path, const CorpusOptions& options) {
  std::error_code ec;
  if (!fs::exists(path, ec)) FERRY_THROW(IoError, "corpus '", path, "' does not exist");
  std::vector<fs::path> files;
  if (fs::is_directory(path, ec)) {
    for (auto it = fs::recursive_directory_iterator(path, fs::directory_options::skip_permission_denied, ec);
         it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (ec) break;
      if (!it->is_regular_file(ec)) continue;
      const auto& p = it->path();
      if (!options.extension.empty() && p.extension() != options.extension) continue;
      if (p.string().find("/test") != std::string::npos) continue;  // keep the library, not its test data
      if (it->file_size(ec) > options.max_file_bytes) continue;
      files.push_back(p);
    }
    std::sort(files.begin(), files.end());
  } else {
    require_regular_file(path, "corpus");  // /dev/zero would never end, a FIFO would block
    files.push_back(path);
  }
  std::string text;
  for (const auto& f : files) {
    if (text.size() >= options.max_bytes) break;
    std::ifstream in(f, std::ios::binary);
    if (!in) continue;
    std::ostringstream s;
    s << in.rdbuf();
    text += s.str();
    text += "\n\n";
  }
  if (text.size() > options.max_bytes) text.resize(options.max_bytes);
  if (text.empty()) FERRY_THROW(IoError, "corpus '", path, "' holds no text", options.extension.empty() ? "" : " (looked for *",
                                options.extension, options.extension.empty() ? "" : " files)");
  return text;
}

std::string default_corpus_path() {
  for (const char* p : {"/usr/lib/python3.13", "/usr/lib/python3.12", "/usr/lib/python3.11", "/usr/lib/python3.10",
                        "/usr/lib/python3.9", "/usr/lib/python3"})
    if (fs::is_directory(p)) return p;
  return "";
}

}  // namespace ferry
