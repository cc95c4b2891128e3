#include "core/proc_stats.h"

#include <fstream>
#include <string>

namespace ferry {
namespace {

// The number after `key` on its line of `path`, times `scale`; 0 when absent.
std::uint64_t field(const char* path, const std::string& key, std::uint64_t scale) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0) {
      try {
        return std::stoull(line.substr(key.size())) * scale;
      } catch (const std::exception&) {
        return 0;
      }
    }
  return 0;
}

}  // namespace

std::uint64_t process_storage_read_bytes() { return field("/proc/self/io", "read_bytes:", 1); }

std::uint64_t process_peak_rss_bytes() { return field("/proc/self/status", "VmHWM:", 1024); }

bool reset_peak_rss() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

}  // namespace ferry
