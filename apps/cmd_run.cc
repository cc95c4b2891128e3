// `ferry run --np 4 --servers 1 [--link 1Gbps,50us] -- /usr/bin/python3 train.py ...`: starts a
// training script that uses ferry's Python package under mpirun, as horovodrun does. The script's
// ferry.init() reads FERRY_SERVERS, and DistributedOptimizer's default link is FERRY_LINK.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "apps/cli.h"
#include "apps/link_flag.h"
#include "apps/mpi_launch.h"
#include "comm/link/link_options.h"
#include "core/error.h"
#include "core/machine_limits.h"

namespace ferry::apps {

int run_run(int argc, char** argv) {
  CLI::App app{"Start a script that uses ferry's Python package on every rank, under mpirun", "ferry run"};
  init_app(app);
  int np = 4;
  int servers = 0;
  std::string link = "none";
  bool oversubscribe = false;
  std::vector<std::string> command;
  app.add_option("--np", np, "worker ranks")->capture_default_str();
  app.add_option("--servers", servers, "parameter-server ranks (the last ranks; ferry.init() serves on them)")
      ->capture_default_str();
  add_link_flag(app, link);  // DistributedOptimizer's default link on every rank
  app.add_flag("--oversubscribe", oversubscribe, "allow more than 8 ranks per core");
  app.add_option("command", command, "the program and its arguments, after --")->required();
  parse_command_line(app, argc, argv);
  FERRY_REQUIRE_GE(np, 1, "--np");
  FERRY_REQUIRE_OP(servers, >=, 0, "--servers");
  comm::parse_link_spec(link);  // a bad link fails here, not on every rank
  require_ranks_fit(np + servers, " ranks", oversubscribe);
  setenv("FERRY_SERVERS", std::to_string(servers).c_str(), 1);
  setenv("FERRY_LINK", link.c_str(), 1);
  const ChildResult job = run_under_mpirun(np + servers, command, {"FERRY_SERVERS", "FERRY_LINK"});
  if (job.signal != 0) {
    std::fprintf(stderr, "ferry run: stopped by signal %d (%s); mpirun and its ranks were ended\n", job.signal,
                 strsignal(job.signal));
    return signalled_exit_code(job.signal);
  }
  return job.exit_code;
}

}  // namespace ferry::apps
