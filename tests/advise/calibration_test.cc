#include <gtest/gtest.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "advise/calibration.h"
#include "test_models.h"

namespace ferry::advise {
namespace {

using testing::scenario;
using testing::synthetic_model;
using train::Topology;

// Runs "measured" by the model itself with known constants, over the kinds of runs the
// calibration set holds (compute-only at 1..8 ranks, S-SGD on allreduce and the PS at several
// links, a large-message model): the fit must find the constants again.
TEST(Calibration, RecoversKnownConstantsFromSyntheticRuns) {
  const ModelProfile small = synthetic_model("small", {800, 32, 51200, 64, 400000, 128, 1280, 10}, 0.010, 0.016, 0.002);
  const ModelProfile large = synthetic_model("large", {5000000, 5000000}, 0.030, 0.060, 0.010);
  MachineConstants truth;
  truth.cores = 1.8;
  truth.compute_scale = 1.25;
  truth.cpu_s_per_byte = 6e-10;
  truth.message_s = 80e-6;
  truth.ps_overlap = 0.35;
  truth.run_overhead_s = 0.4;
  std::vector<CalibrationPoint> pts;
  auto add = [&](const std::string& algo, Scenario sc) {
    sc.steps = 60;
    pts.push_back({algo, sc, predict(algo, sc, truth).samples_per_s});
  };
  for (int n : {1, 2, 4, 8}) add("compute-only", scenario(small, n, 0, Topology::kAllreduce, 0));
  for (double bw : {3.75e7, 1.25e8, 1.25e9}) {
    add("ssgd", scenario(small, 4, 0, Topology::kAllreduce, bw));
    add("ssgd", scenario(small, 4, 1, Topology::kParameterServer, bw));
  }
  add("ssgd", scenario(large, 2, 0, Topology::kAllreduce, 1.25e9));
  add("ssgd", scenario(small, 2, 1, Topology::kParameterServer, 0));
  add("ssgd", scenario(small, 8, 0, Topology::kAllreduce, 0));

  const MachineConstants fit = fit_constants(pts, MachineConstants{}, FitOptions{800, 4, 4});
  EXPECT_LT(rms_log_error(pts, fit), 2e-3);
  EXPECT_NEAR(fit.cores, truth.cores, 0.05 * truth.cores);
  EXPECT_NEAR(fit.compute_scale, truth.compute_scale, 0.05 * truth.compute_scale);
  EXPECT_NEAR(fit.cpu_s_per_byte, truth.cpu_s_per_byte, 0.15 * truth.cpu_s_per_byte);
  EXPECT_NEAR(fit.message_s, truth.message_s, 0.15 * truth.message_s);
  EXPECT_NEAR(fit.ps_overlap, truth.ps_overlap, 0.05);
  EXPECT_NEAR(fit.run_overhead_s, truth.run_overhead_s, 0.1);
}

TEST(Calibration, ConstantsRoundTripThroughJson) {
  MachineConstants k;
  k.cores = 1.7;
  k.message_s = 1e-5;
  const MachineConstants back = constants_from_json(constants_to_json(k), "test");
  EXPECT_EQ(back.cores, k.cores);
  EXPECT_EQ(back.message_s, k.message_s);
}

TEST(Calibration, RefusesNoRunsAndBadFiles) {
  EXPECT_THROW(fit_constants({}, MachineConstants{}), InvalidArgument);
  EXPECT_THROW(load_constants("/nonexistent/calibration.json"), IoError);
  EXPECT_THROW(constants_from_json(nlohmann::json{{"cores", 2}}, "test"), FormatError);
  auto j = constants_to_json(MachineConstants{});
  j["ps_overlap"] = 3;
  EXPECT_THROW(constants_from_json(j, "test"), FormatError);
  j["ps_overlap"] = "x";
  EXPECT_THROW(constants_from_json(j, "test"), FormatError);
}

}  // namespace
}  // namespace ferry::advise
