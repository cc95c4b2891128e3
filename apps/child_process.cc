#include "apps/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "core/error.h"

namespace ferry::apps {

ChildResult run_child(const std::vector<std::string>& args, const ChildOptions& options) {
  FERRY_CHECK(!args.empty(), "run_child needs a program");
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  // The signals are blocked from before the fork, so none is lost between fork and the wait loop;
  // the child restores the mask before exec.
  sigset_t forwarded, old;
  sigemptyset(&forwarded);
  for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&forwarded, s);
  sigprocmask(SIG_BLOCK, &forwarded, &old);
  std::fflush(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    sigprocmask(SIG_SETMASK, &old, nullptr);
    FERRY_THROW(IoError, "cannot fork to start ", args[0], ": ", std::strerror(errno));
  }
  if (pid == 0) {
    setpgid(0, 0);
    // Even a SIGKILL of ferry, which it cannot forward, stops the job: the kernel sends the
    // child SIGTERM when ferry dies (mpirun then stops its ranks).
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(128 + SIGTERM);  // ferry died before prctl
    sigprocmask(SIG_SETMASK, &old, nullptr);
    // A process group of its own is a background group on a terminal, where reading stdin would
    // stop it (SIGTTIN); the job reads no input.
    const int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd >= 0) {
      dup2(null_fd, 0);
      ::close(null_fd);
    }
    if (!options.log_path.empty()) {
      const int fd = ::open(options.log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        ::close(fd);
      }
    }
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "ferry: error: cannot run %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  setpgid(pid, pid);  // also here: whichever of parent and child runs first, the group exists

  using Clock = std::chrono::steady_clock;
  ChildResult result;
  Clock::time_point deadline{};
  bool killed = false;
  int status = 0;
  for (;;) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) break;
    const timespec tick{0, 50'000'000};
    const int sig = sigtimedwait(&forwarded, nullptr, &tick);
    if (sig > 0) {
      if (result.signal == 0) {
        result.signal = sig;
        deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(options.kill_after_s));
      }
      kill(-pid, sig);
    }
    if (result.signal != 0 && !killed && Clock::now() >= deadline) {
      kill(-pid, SIGKILL);
      killed = true;
    }
  }
  // After a forwarded signal nothing of the group may outlive the child (a rank that mpirun
  // failed to stop would otherwise run on as an orphan).
  if (result.signal != 0) kill(-pid, SIGKILL);
  sigprocmask(SIG_SETMASK, &old, nullptr);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

}  // namespace ferry::apps
