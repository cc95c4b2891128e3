#include <unistd.h>

#include <climits>

#include "apps/command.h"

namespace ferry::apps {

// Each subcommand's entry point, defined in its cmd_*.cc file.
int run_compare(int argc, char** argv);
int run_units(int argc, char** argv);
int run_moe(int argc, char** argv);
int run_train(int argc, char** argv);
int run_run(int argc, char** argv);
int run_advise(int argc, char** argv);

const std::vector<Command>& commands() {
  static const std::vector<Command> kCommands = {
      {"train", "distributed data-parallel training (S-SGD, ASGD, ...) over MPI", run_train},
      {"compare", "run several training algorithms under one setting; csv, table and plots", run_compare},
      {"run", "start a Python training script (import ferry) on every rank under mpirun, as horovodrun", run_run},
      {"advise", "predict every training algorithm's throughput from a calibrated cost model; check it against runs", run_advise},
      {"units", "parse and print a quantity (bandwidth, duration, size)", run_units},
      {"moe", "MoE inference with expert offloading: generate, serve, bench, quantize, simulate, ... (ferry moe --help)", run_moe},
  };
  return kCommands;
}

std::string self_executable() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "ferry";
  return std::string(buf, static_cast<std::size_t>(n));
}

}  // namespace ferry::apps
