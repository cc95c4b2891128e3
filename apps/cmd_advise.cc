// `ferry advise`: the calibrated cost model of every training algorithm (src/advise,
// docs/advise.md). Modes: the ranked table for a model, cluster and link (default);
// --validate RUNS... (predicted against measured summary.json); --calibrate RUNS... (fit the
// machine constants, write them with --write-calibration).
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "advise/advise.h"
#include "advise/device_profile.h"
#include "apps/cli.h"
#include "apps/render_plots.h"
#include "apps/train_flags.h"
#include "compress/codec_registry.h"
#include "core/error.h"
#include "core/metrics.h"
#include "core/report.h"
#include "core/spec.h"
#include "core/units.h"
#include "train/delayed_ps_options.h"
#include "train/local_sgd_options.h"
#include "train/models/model.h"

namespace ferry::apps {
namespace {

std::vector<int> parse_counts(const std::string& s, const char* flag) {
  std::vector<int> out;
  for (const auto& item : split_list(s)) {
    std::size_t used = 0;
    int v = 0;
    try {
      v = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    FERRY_REQUIRE(used == item.size() && v >= 1, flag, ": expected positive integers separated by commas, got '", item, "'");
    out.push_back(v);
  }
  FERRY_REQUIRE(!out.empty(), flag, ": expected at least one count");
  return out;
}

// The calibration: --calibration FILE, else bench/advise/results/calibration.json when run from
// the source tree, else the ideal machine (said on stdout: stderr carries only the error line).
advise::CalibrationFile calibration_for(const std::string& path) {
  if (!path.empty()) return advise::load_calibration(path);
  const std::string fallback = "bench/advise/results/calibration.json";
  if (std::filesystem::exists(fallback)) return advise::load_calibration(fallback);
  std::printf("ferry advise: no --calibration file (and no %s): uncalibrated constants\n", fallback.c_str());
  return {};
}

// Where zoo profiles come from: --profiles DIR (read, and written when measured), else the
// calibration's own profiles (read only), else measured in this process.
advise::ProfileBookOptions profile_source(const std::string& profiles, const advise::CalibrationFile& calibration) {
  if (!profiles.empty()) return {profiles, true};
  if (!calibration.profiles_dir.empty() && std::filesystem::is_directory(calibration.profiles_dir))
    return {calibration.profiles_dir, false};
  return {};
}

void write_table(const std::string& dir, const std::string& stem, const ReportTable& t) {
  write_report_file(dir + "/" + stem + ".csv", t.csv());
  write_report_file(dir + "/" + stem + ".md", t.markdown());
}

}  // namespace

int run_advise(int argc, char** argv) {
  CLI::App app{"Predict every training algorithm's throughput from a calibrated cost model", "ferry advise"};
  init_app(app);
  advise::AdviseOptions o;
  std::string workers = "4", bandwidth = "1Gbps", latency = "50us", codecs = "none,twobit:threshold=0.005";
  std::string calibration, out, write_calibration, profile_out, profiles;
  std::vector<std::string> validate, calibrate;
  app.add_option("--model", o.model, "zoo model (" + choices(train::model_names()) + ") or a profile file (.json)")
      ->capture_default_str();
  app.add_option("--workers", workers, "worker counts, comma-separated (projections: 16,64,256,1024)")->capture_default_str();
  app.add_option("--servers", o.servers, "parameter-server ranks")->capture_default_str();
  app.add_option("--workers-per-server", o.workers_per_server,
                 "projections: servers = workers / N (0: always --servers)")->capture_default_str();
  app.add_option("--bandwidth", bandwidth, "per-NIC bandwidth(s), comma-separated (1Gbps, 10Gbps, ...)")->capture_default_str();
  app.add_option("--latency", latency, "one-way latency per message")->capture_default_str();
  app.add_option("--device", o.device, "compute profile: " + choices(advise::device_profile_names()) + " or a JSON file")
      ->capture_default_str();
  app.add_option("--batch", o.batch, "per-worker batch")->capture_default_str();
  app.add_option("--codecs", codecs, "codec specs, comma-separated, for the algorithms that take one: " +
                                         choices(compress::codec_names()))->capture_default_str();
  add_algo_shorthand_flags(app, o.shorthands);
  app.add_option("--steps", o.steps,
                 "predict a run of N iterations per worker (warm-up and post-local included, as --validate "
                 "predicts a run); 0: the steady state")->capture_default_str();
  app.add_option("--calibration", calibration, "machine constants (default bench/advise/results/calibration.json)");
  app.add_option("--validate", validate, "run directories (summary.json) to predict and compare")->expected(1, -1);
  app.add_option("--calibrate", calibrate, "run directories to fit the machine constants to")->expected(1, -1);
  app.add_option("--write-calibration", write_calibration, "with --calibrate: the calibration file to write");
  app.add_option("--profile-out", profile_out, "also write the model's profile (JSON) here");
  app.add_option("--profiles", profiles,
                 "directory caching zoo models' profiles (NAME_bBATCH.json): read if there, else measured and written "
                 "(default: the calibration's profiles, read only)");
  app.add_option("--out", out, "directory for CSV, Markdown, JSON and plots");
  parse_command_line(app, argc, argv);
  FERRY_REQUIRE(validate.empty() || calibrate.empty(), "--validate and --calibrate are separate runs");
  FERRY_REQUIRE(write_calibration.empty() || !calibrate.empty(), "--write-calibration needs --calibrate RUNS");
  if (!out.empty()) make_dirs(out);
  if (!profiles.empty()) make_dirs(profiles);

  if (!calibrate.empty()) {
    FERRY_REQUIRE(!write_calibration.empty(), "--calibrate needs --write-calibration FILE");
    const auto runs = advise::read_runs(calibrate);
    advise::ProfileBook book(advise::ProfileBookOptions{profiles, true});
    int used = 0;
    advise::MachineConstants start;
    const auto k = advise::calibrate(runs, book, start, &used);
    nlohmann::json j = {{"constants", advise::constants_to_json(k)}, {"runs", used}};
    std::vector<std::string> dirs;
    for (const auto& r : runs)
      if (r.set == "calibration" || r.set.empty()) dirs.push_back(r.dir);
    j["fitted_to"] = dirs;
    // The profiles the constants are relative to, for every later projection and validation.
    if (!profiles.empty())
      j["profiles"] = std::filesystem::relative(std::filesystem::absolute(profiles),
                                                std::filesystem::absolute(write_calibration).parent_path())
                          .string();
    write_json_file(write_calibration, j);
    std::printf("ferry advise: fitted to %d runs: %s\n  wrote %s\n", used, advise::constants_to_json(k).dump().c_str(),
                write_calibration.c_str());
    return 0;
  }
  const advise::CalibrationFile calib = calibration_for(calibration);
  const advise::MachineConstants k = calib.constants;
  advise::ProfileBook book(profile_source(profiles, calib));

  if (!validate.empty()) {
    const auto rows = advise::validate_runs(advise::read_runs(validate), book, k);
    const ReportTable t = advise::validation_table(rows);
    std::printf("%s\n", t.markdown().c_str());
    nlohmann::json summary;
    for (const std::string set : {"calibration", "validation", ""}) {
      const auto s = advise::summarize_errors(rows, set);
      if (s.runs == 0) continue;
      std::printf("%-12s %3d runs: median |error| %.1f %%, worst %.1f %%\n", set.empty() ? "all" : set.c_str(), s.runs,
                  100 * s.median_abs, 100 * s.worst_abs);
      summary[set.empty() ? "all" : set] = {{"runs", s.runs}, {"median_abs_error", s.median_abs}, {"worst_abs_error", s.worst_abs}};
    }
    if (!out.empty()) {
      write_table(out, "validation", t);
      summary["constants"] = advise::constants_to_json(k);
      write_json_file(out + "/validation.json", summary);
      render_plots(advise::validation_plots(rows, out), "ferry advise");
    }
    return 0;
  }

  o.bandwidths.clear();
  for (const auto& w : split_list(bandwidth)) o.bandwidths.push_back(parse_bandwidth_bytes_per_s(w));
  FERRY_REQUIRE(!o.bandwidths.empty(), "--bandwidth: expected at least one bandwidth");
  o.workers = parse_counts(workers, "--workers");
  o.latency_s = parse_duration_s(latency);
  o.codecs = join_spec_items(split_list(codecs));
  const auto rows = advise::advise(o, book, k);
  if (!profile_out.empty()) advise::save_model_profile(book.model(o.model, o.batch), profile_out);
  const auto& model = book.model(o.model, o.batch);
  std::printf("ferry advise: %s (%.3g M parameters, %.1f MB fp32 gradient), batch %lld, device %s, latency %s\n",
              model.name.c_str(), model.parameters() / 1e6, model.gradient_bytes() / 1e6,
              static_cast<long long>(o.batch), o.device.c_str(), format_duration(o.latency_s).c_str());
  std::printf("  profile: %s", book.origin(o.model, o.batch).c_str());
  if (model.compute_noise > 0) std::printf(" (its rounds spread by %.1f %%)", 100 * model.compute_noise);
  std::printf("\n");
  const std::int64_t warmup =
      train::DelayedPsOptions::of_spec(train::fold_shorthands("odsgd", o.shorthands)).warmup_steps;
  if (o.steps > 0)
    std::printf("  samples/s and comm %% over a run of %lld iterations per worker, the delayed algorithms' %lld warm-up "
                "and localsgd's %lld post-local iterations as S-SGD (as --validate predicts such a run)\n",
                static_cast<long long>(o.steps), static_cast<long long>(warmup),
                static_cast<long long>(
                    train::LocalSgdOptions::of_spec(train::fold_shorthands("localsgd", o.shorthands)).post_local));
  else
    std::printf("  samples/s and comm %%: steady state; a run's warm-up (%lld S-SGD iterations of the delayed "
                "algorithms), post-local prefix and first and last iterations are left out (--steps N includes them)\n",
                static_cast<long long>(warmup));
  for (int w : o.workers) {
    std::printf("\n%d workers, %s:\n%s", w, format_bandwidth(o.bandwidths.front()).c_str(),
                advise::advise_table(rows, w, o.bandwidths.front()).markdown().c_str());
  }
  if (!out.empty()) {
    write_report_file(out + "/advise.csv", advise::advise_csv(rows).csv());
    write_table(out, "table", advise::advise_table(rows, o.workers.front(), o.bandwidths.front()));
    write_json_file(out + "/advise.json", {{"model", advise::to_json(model)}, {"constants", advise::constants_to_json(k)}});
    render_plots(advise::advise_plots(rows, o, out), "ferry advise");
    std::printf("\n  wrote %s/{advise.csv,table.md,advise.json} and plots\n", out.c_str());
  }
  return 0;
}

}  // namespace ferry::apps
