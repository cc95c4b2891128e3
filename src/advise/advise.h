// `ferry advise`: every algorithm's predicted throughput for one model, cluster and link,
// ranked, projected over worker counts and bandwidths; and the model checked against measured
// runs (predicted vs measured samples/s). The cost formulas are cost_model.h's entries; this
// file only enumerates configurations (as `ferry compare` pairs algorithms and codecs: a codec
// goes to the algorithms that take one, the algorithms that need one get their default or the
// compressing codecs of the list) and writes reports.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "advise/calibration.h"
#include "advise/cost_model.h"
#include "advise/profile_book.h"
#include "advise/run_record.h"
#include "advise/scenario_spec.h"
#include "core/report.h"
#include "train/strategy.h"

namespace ferry::advise {

struct AdviseOptions {
  std::string model = "cnn";                  // zoo name or profile file
  std::vector<int> workers = {4};             // projected worker counts; the first is the table's
  int servers = 1;                            // parameter-server ranks (at least 1 for ps rows)
  std::vector<double> bandwidths = {125e6};   // bytes/s; the first is the table's
  double latency_s = 50e-6;
  std::string device = "local";
  std::int64_t batch = 64;
  std::vector<std::string> codecs = {"none", "twobit:threshold=0.005"};  // as `ferry compare --codecs`
  // The algorithms' options: flags that stand for keys of their specs (--sync-every:
  // localsgd:sync_every, --delay-steps: ssdsgd:delay_steps), folded into each algorithm's spec
  // (train::fold_shorthands).
  std::vector<train::SpecShorthand> shorthands;
  // Scale the servers with the workers (servers = max(1, workers / workers_per_server)) in
  // projections; 0: keep `servers`.
  int workers_per_server = 0;
  // Iterations per worker of the run to predict, warm-up and post-local prefixes included, as
  // `--validate` predicts a run of that length; 0: the steady state (no prefix, no run overhead).
  std::int64_t steps = 0;
};

struct AdviseRow {
  std::string algo, topology, codec;  // codec: canonical spec
  int workers = 0, servers = 0;
  double bandwidth_bytes_per_s = 0;
  Prediction prediction;
  double speedup = 0;  // over ssgd (the speedup-baseline strategy, fp32) on the same cluster and link
};

// Every configuration at every (workers, bandwidth); rows of one (workers, bandwidth) are
// ranked by predicted samples/s. Each row is predict_spec of its ScenarioSpec (spec_of_row), the
// function `--validate` calls for a run. InvalidArgument for bad options (naming the flag).
std::vector<AdviseRow> advise(const AdviseOptions& options, ProfileBook& book, const MachineConstants& k);

// The configuration of one row: what a `ferry train` of it would record (spec_of(run) of such a
// run is this spec, test ProjectionAndValidationAgree).
ScenarioSpec spec_of_row(const AdviseOptions& options, const AdviseRow& row);

// The ranked table at the first (workers, bandwidth), as printed.
ReportTable advise_table(const std::vector<AdviseRow>& rows, int workers, double bandwidth);
// Every row (CSV).
ReportTable advise_csv(const std::vector<AdviseRow>& rows);
// speedup_vs_workers.png (at the first bandwidth) and speedup_vs_bandwidth.png (at the first
// worker count), one line per configuration; scripts written into `dir`.
std::vector<PlotScript> advise_plots(const std::vector<AdviseRow>& rows, const AdviseOptions& options,
                                     const std::string& dir);

// A measured run and its prediction.
struct ValidationRow {
  RunRecord run;
  Prediction prediction;
  double error = 0;  // (predicted - measured) / measured, samples/s
};

// Predicts every run with the constants `k` by predict_spec(spec_of(run)) (runs of algorithms or models that cannot be
// predicted are skipped with a line on stderr).
std::vector<ValidationRow> validate_runs(const std::vector<RunRecord>& runs, ProfileBook& book,
                                         const MachineConstants& k);
// Median and worst absolute error of rows whose set is `set` ("" = all).
struct ErrorSummary {
  int runs = 0;
  double median_abs = 0, worst_abs = 0;
};
ErrorSummary summarize_errors(const std::vector<ValidationRow>& rows, const std::string& set);
ReportTable validation_table(const std::vector<ValidationRow>& rows);
// predicted_vs_measured.png: predicted against measured samples/s, one series per set.
std::vector<PlotScript> validation_plots(const std::vector<ValidationRow>& rows, const std::string& dir);

// Fits the constants to the runs of set "calibration" (all runs when none is marked).
MachineConstants calibrate(const std::vector<RunRecord>& runs, ProfileBook& book, const MachineConstants& start,
                           int* used = nullptr);

}  // namespace ferry::advise
