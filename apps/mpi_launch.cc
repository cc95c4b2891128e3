#include "apps/mpi_launch.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "apps/child_process.h"
#include "apps/command.h"
#include "core/error.h"
#include "core/path_checks.h"

namespace ferry::apps {

ChildResult run_under_mpirun(int ranks, const std::vector<std::string>& command,
                             const std::vector<std::string>& export_env) {
  FERRY_CHECK(!command.empty(), "no command to run under mpirun");
  require_program(command[0], "program");  // before mpirun, whose answer would be a banner per rank
  std::vector<std::string> args = {"mpirun", "-np", std::to_string(ranks)};
  if (geteuid() == 0) args.push_back("--allow-run-as-root");
  if (ranks > static_cast<int>(std::thread::hardware_concurrency())) args.push_back("--oversubscribe");
  // Ranks share the machine's cores: do not let OpenMPI pin them all to one core each.
  args.insert(args.end(), {"--bind-to", "none", "-x", "OMP_NUM_THREADS=1"});
  for (const auto& name : export_env) args.insert(args.end(), {"-x", name});
  args.insert(args.end(), command.begin(), command.end());
  return run_child(args);
}

ChildResult relaunch_under_mpirun(int ranks, int argc, char** argv, const std::vector<std::string>& export_env) {
  std::vector<std::string> command = {self_executable()};
  for (int i = 0; i < argc; ++i) command.push_back(argv[i]);
  return run_under_mpirun(ranks, command, export_env);
}

namespace {

std::string rank_file(int rank, const char* suffix) {
  const char* dir = std::getenv(kRankDirEnv);
  if (!dir || !*dir) return "";
  return std::string(dir) + "/rank-" + std::to_string(rank) + "." + suffix;
}

void write_text(const std::string& path, const std::string& text) {
  if (path.empty()) return;
  std::ofstream out(path);
  out << text << "\n";
}

char g_term_path[4096];  // written by the SIGTERM handler (async-signal-safe: open, close, _exit)

void on_sigterm(int sig) {
  int fd = ::open(g_term_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) ::close(fd);
  _exit(128 + sig);
}

std::string read_first_line(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace

void rank_status_start(int rank) {
  const std::string pid = rank_file(rank, "pid");
  if (pid.empty()) return;
  const std::string term = rank_file(rank, "term");
  if (term.size() < sizeof g_term_path) {
    std::memcpy(g_term_path, term.c_str(), term.size() + 1);
    struct sigaction sa {};
    sa.sa_handler = on_sigterm;
    sigaction(SIGTERM, &sa, nullptr);
  }
  write_text(pid, std::to_string(getpid()));
}

void rank_status_error(int rank, const std::string& message) { write_text(rank_file(rank, "error"), message); }

void rank_status_exit(int rank) { write_text(rank_file(rank, "exit"), "0"); }

std::string describe_rank_failure(const std::string& dir, int ranks, int num_workers) {
  namespace fs = std::filesystem;
  auto role = [&](int r) {
    return r < num_workers ? "worker " + std::to_string(r) : "server " + std::to_string(r - num_workers);
  };
  std::string errors, deaths;
  for (int r = 0; r < ranks; ++r) {
    const fs::path base = fs::path(dir) / ("rank-" + std::to_string(r));
    auto has = [&](const char* suffix) { return fs::exists(base.string() + "." + suffix); };
    if (!has("pid")) continue;
    const std::string who = "rank " + std::to_string(r) + " (" + role(r) + ", pid " +
                            read_first_line(base.string() + ".pid") + ")";
    if (has("error"))
      errors += (errors.empty() ? "" : "; ") + who + " failed: " + read_first_line(base.string() + ".error");
    else if (!has("term") && !has("exit"))
      deaths += (deaths.empty() ? "" : ", ") + who;
  }
  if (!errors.empty()) return errors + "; the other ranks were stopped";
  if (!deaths.empty())
    return deaths + " died without reporting an error (killed by a signal or out of memory); the other ranks were "
                    "stopped";
  return "";
}

}  // namespace ferry::apps
