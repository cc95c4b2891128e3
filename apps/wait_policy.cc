#include "apps/wait_policy.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace ferry::apps {

void prefer_passive_wait(bool streams_from_disk) {
  if (!streams_from_disk || std::getenv("OMP_WAIT_POLICY")) return;
  // The arguments exactly as this process got them, NUL-separated.
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<char*> argv;
  for (std::size_t at = 0; at < cmdline.size();) {
    argv.push_back(const_cast<char*>(cmdline.c_str() + at));
    const std::size_t end = cmdline.find('\0', at);
    if (end == std::string::npos) break;
    at = end + 1;
  }
  if (argv.empty()) return;
  argv.push_back(nullptr);
  if (setenv("OMP_WAIT_POLICY", "PASSIVE", 1) != 0) return;
  execv("/proc/self/exe", argv.data());
  unsetenv("OMP_WAIT_POLICY");  // exec failed: the run goes on with the policy it started with
}

}  // namespace ferry::apps
