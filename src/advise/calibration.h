// Calibration: the machine constants of cost_model.h fitted to measured runs. The fit
// minimises the sum over runs of (log predicted - log measured samples/s)^2 by Nelder-Mead in
// the constants' box (each constant mapped to [0, 1] between its bounds), from several
// starts; the best is kept. The constants are stored in a JSON calibration file.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "advise/cost_model.h"

namespace ferry::advise {

// One measured run to fit: its scenario (model profile owned by the caller) and algorithm.
struct CalibrationPoint {
  std::string algo;
  Scenario scenario;
  double measured_samples_per_s = 0;
};

struct FitOptions {
  int iterations = 600;  // Nelder-Mead iterations per start
  int starts = 4;        // starting points (the given constants, then spread over the box)
  double max_cores = 4;  // upper bound of `cores` (the machine's core count x 2)
};

// Fits every constant of MachineConstants; `start` seeds the first start. InvalidArgument for
// no points.
MachineConstants fit_constants(const std::vector<CalibrationPoint>& points, const MachineConstants& start,
                               const FitOptions& options = {});
// Root-mean-square of the log error of `k` over `points`.
double rms_log_error(const std::vector<CalibrationPoint>& points, const MachineConstants& k);

nlohmann::json constants_to_json(const MachineConstants& k);
MachineConstants constants_from_json(const nlohmann::json& j, const std::string& what);
// IoError / FormatError naming the file.
MachineConstants load_constants(const std::string& path);

// A calibration file as `ferry advise` uses it: the constants, and the directory of the zoo
// model profiles they were fitted with (the file's "profiles", relative to the file's own
// directory; empty when it names none). compute_scale is the ratio of in-run compute to those
// profiles, so predictions read the same profiles (profile_book.h).
struct CalibrationFile {
  MachineConstants constants;
  std::string profiles_dir;  // resolved against the file's directory; "" = none recorded
};
CalibrationFile load_calibration(const std::string& path);

}  // namespace ferry::advise
