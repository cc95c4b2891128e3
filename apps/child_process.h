// Running a child process (mpirun, or one `ferry train` of `ferry compare`) so that a signal sent
// to ferry reaches the whole job: a scheduler or a wrapper that stops ferry by PID with SIGTERM,
// SIGINT or SIGHUP must not leave mpirun and its ranks running under PID 1.
#pragma once

#include <string>
#include <vector>

namespace ferry::apps {

struct ChildOptions {
  std::string log_path;        // stdout and stderr go to this file; empty: inherited
  double kill_after_s = 10.0;  // after forwarding a signal, SIGKILL the child's group if it is still there
};

struct ChildResult {
  int exit_code = 0;  // the child's exit code, 128 + N if it died of signal N
  int signal = 0;     // the signal ferry received and forwarded (0: none)
};

// Starts args[0] (searched in PATH) in a process group of its own, stdin from /dev/null, and
// waits for it. SIGTERM,
// SIGINT and SIGHUP that ferry receives meanwhile are forwarded to the child's whole group
// (mpirun and its local ranks), and the group is killed if it has not ended kill_after_s later.
// Throws IoError if the child cannot be started; exit code 127 if the program cannot be run.
ChildResult run_child(const std::vector<std::string>& args, const ChildOptions& options = {});

// The exit code with which a ferry that forwarded `signal` ends: 128 + signal (as a shell reports it).
inline int signalled_exit_code(int signal) { return 128 + signal; }

}  // namespace ferry::apps
