// A measured training run as ferry advise reads it: the run's summary.json (train/run_summary.h)
// plus, when present, advise_run.json next to it, written by bench/advise/run.sh with what
// summary.json does not record (options of the algorithm that join its spec, the run's set: calibration or
// validation, and for a run across the namespace cluster the kernel's rate, kernel_rate: "1gbit",
// which replaces the summary's link).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ferry::advise {

struct RunRecord {
  std::string dir;       // the run's directory
  std::string set;       // "calibration", "validation" or "" (not said)
  std::string algo, topology, model, codec, link;
  int workers = 0, servers = 0;
  std::int64_t batch = 0, steps = 0;
  double bandwidth_bytes_per_s = 0;  // 0: no link emulation
  double latency_s = 0;
  double samples_per_s = 0, comm_wait_fraction = 0, bytes_sent_per_worker = 0;
};

// Every summary.json under each of `roots` (a run directory or a tree of them), sorted by
// directory. IoError for a root that does not exist; FormatError naming the file for a summary
// that lacks a field.
std::vector<RunRecord> read_runs(const std::vector<std::string>& roots);

}  // namespace ferry::advise
