#include "apps/mpi_launch.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "apps/command.h"
#include "core/error.h"

namespace ferry::apps {

int relaunch_under_mpirun(int ranks, int argc, char** argv) {
  std::vector<std::string> args = {"mpirun", "-np", std::to_string(ranks)};
  if (geteuid() == 0) args.push_back("--allow-run-as-root");
  if (ranks > static_cast<int>(std::thread::hardware_concurrency())) args.push_back("--oversubscribe");
  // Ranks share the machine's cores: do not let OpenMPI pin them all to one core each.
  args.insert(args.end(), {"--bind-to", "none", "-x", "OMP_NUM_THREADS=1"});
  args.push_back(self_executable());
  for (int i = 0; i < argc; ++i) args.push_back(argv[i]);
  std::vector<char*> cargs;
  for (auto& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) FERRY_THROW(IoError, "cannot fork to start mpirun");
  if (pid == 0) {
    execvp("mpirun", cargs.data());
    std::fprintf(stderr, "ferry: error: cannot run mpirun (install openmpi-bin): %s\n", std::strerror(errno));
    _exit(2);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 1;
}

}  // namespace ferry::apps
