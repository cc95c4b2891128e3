// Re-launching ferry under mpirun, as horovodrun does for Horovod.
#pragma once

#include <string>
#include <vector>

#include "apps/child_process.h"

namespace ferry::apps {

// Runs `mpirun -np ranks <this executable> argv...` (adding --allow-run-as-root as root and
// --oversubscribe when ranks exceed the cores) and waits for it (run_child: a SIGTERM, SIGINT or
// SIGHUP to ferry ends the whole job). Environment variables named in `export_env` are passed to
// the ranks (mpirun -x).
ChildResult relaunch_under_mpirun(int ranks, int argc, char** argv, const std::vector<std::string>& export_env = {});
// The same for any command (`ferry run -- python3 train.py`): mpirun -np ranks command...
ChildResult run_under_mpirun(int ranks, const std::vector<std::string>& command,
                             const std::vector<std::string>& export_env = {});

// Rank status files, so that the launcher can say which rank failed when mpirun stops a job.
// Every rank writes, into the directory named by $FERRY_RANK_DIR (when set):
//   rank-<r>.pid    its pid, at start (tests use it to kill a rank)
//   rank-<r>.error  the message of the error that ends it
//   rank-<r>.term   it was stopped by SIGTERM (mpirun stopping the job after another rank failed)
//   rank-<r>.exit   it finished normally
// A rank with a .pid and none of the others died without a word: killed (kill -9, out of memory).
inline constexpr const char* kRankDirEnv = "FERRY_RANK_DIR";

// Inside a rank: writes rank-<rank>.pid and installs the SIGTERM marker (no-op without the env var).
void rank_status_start(int rank);
void rank_status_error(int rank, const std::string& message);
void rank_status_exit(int rank);
// In the launcher after mpirun failed: one line naming the failed rank(s), by role
// (`num_workers` workers first, then servers), or "" when the files say nothing.
std::string describe_rank_failure(const std::string& dir, int ranks, int num_workers);

}  // namespace ferry::apps
