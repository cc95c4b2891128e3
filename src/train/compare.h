// `ferry compare`: the plan of (algorithm, codec) runs and the report over their results
// (compare.csv, compare.md, gnuplot plots). Running the runs is the app's job (one `ferry
// train` per configuration); this file knows what to run and how to read and report it.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

#include "core/report.h"
#include "train/strategy.h"

namespace ferry::train {

struct CompareConfig {
  std::string algo;
  std::string codec;     // as given to --codec ("none", "twobit", ...)
  std::string topology;  // ps where the algorithm supports it (the delayed ones need it), else allreduce
  std::string link;      // --link spec of this run
  std::string name;      // unique, file-name safe: algo[-codec]@link
};

// What "time to target" measures: test accuracy reaching at least `value` (image models), or
// test perplexity, exp(mean cross-entropy per token), falling to at most `value` (token models).
struct QualityTarget {
  bool perplexity = false;
  double value = 0.87;

  bool reached(double quality) const { return perplexity ? quality <= value : quality >= value; }
  // "test accuracy 87.0 %" or "test perplexity 6.00".
  std::string describe() const;
};

struct CompareResult {
  CompareConfig config;
  nlohmann::json summary;                         // summary.json of the run (empty if it failed)
  std::vector<std::pair<double, double>> quality;  // (training seconds, accuracy or perplexity) per eval
  int exit_code = 0;
};

// Which pairs make sense, asked of the strategies' entries: one that takes a codec runs with each
// codec of the list; one that needs one (cdsgd) with each compressing codec of it (its default
// codec when there is none); one that takes none sends fp32. The compute floor (compute-only) is
// always added.
std::vector<CompareConfig> compare_plan(const std::vector<std::string>& algos, const std::vector<std::string>& codecs,
                                        const std::vector<std::string>& links);

// The --codec a run passes to `ferry train` for the plan's `codec`: a bare codec name that is an
// algorithm's default codec (cdsgd's twobit, the name compare_plan gives cdsgd) means that default
// with the given shorthands folded into the algorithm's spec (--threshold: cdsgd:threshold), so
// that every algorithm runs it with one threshold; any other spec is passed as given.
std::string compare_run_codec(const std::string& codec, const std::vector<SpecShorthand>& shorthands);

// Reads out_dir/summary.json and metrics.jsonl of one run into `result` (its quality series in the
// units of `target`).
void load_compare_result(const std::string& run_dir, const QualityTarget& target, CompareResult& result);

// First evaluation time (training seconds) at which the quality reached `target`; NaN if never.
double time_to_target(const CompareResult& result, const QualityTarget& target);

struct CompareReport {
  std::string markdown;            // the table of compare.md
  std::vector<PlotScript> plots;   // plots.gp, for the application to render (core/report.h)
};

// Writes compare.csv, compare.md, the plot data and plots.gp into out_dir; rendering plots.gp
// draws accuracy_vs_time.png (perplexity_vs_time.png for a perplexity target), samples_per_s.png and, with several links, speedup_vs_bandwidth.png.
CompareReport write_compare_report(const std::string& out_dir, const std::vector<CompareResult>& results,
                                   const QualityTarget& target);

}  // namespace ferry::train
