// One prediction path: the projection table's entry for a configuration and `--validate` of a
// run of that configuration are the same number (both are predict_spec of one ScenarioSpec);
// a run's warm-up and its waits enter the prediction as the formula says; the delayed family's
// communication thread carries its pushes and pulls in turn; profiles come from the
// calibration's directory.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "advise/advise.h"
#include "advise/calibration.h"
#include "compress/codec_registry.h"
#include "core/error.h"
#include "core/units.h"
#include "test_models.h"
#include "train/strategy.h"

namespace ferry::advise {
namespace {

namespace fs = std::filesystem;
using testing::synthetic_model;

fs::path temp_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("ferry_advise_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Constants with every term in play (the bench calibration's order of magnitude).
MachineConstants busy_machine() {
  MachineConstants k;
  k.cores = 2.4;
  k.compute_scale = 1.2;
  k.cpu_s_per_byte = 1.5e-9;
  k.message_s = 20e-6;
  k.ps_overlap = 0.15;
  k.run_overhead_s = 0.3;
  return k;
}

// The question: 3 workers and 1 server at 700 Mbps, 50 us, a run of 312 iterations.
// Every row of the table is written out as `ferry train` records a run of it (summary.json,
// and advise_run.json with the algorithm options), read back and validated: the prediction of
// the run must be the table's, bit for bit.
TEST(ProjectionAndValidation, AgreeBitForBitOnEveryRow) {
  const fs::path dir = temp_dir("projection");
  const ModelProfile m = synthetic_model("m", {288, 32, 18432, 64, 401408, 128, 1280, 10}, 0.017, 0.016, 0.0005);
  const std::string profile = (dir / "m.json").string();
  save_model_profile(m, profile);

  AdviseOptions o;
  o.model = profile;
  o.workers = {3};
  o.servers = 1;
  o.bandwidths = {parse_bandwidth_bytes_per_s("700Mbps")};
  o.latency_s = parse_duration_s("50us");
  o.batch = 64;
  o.codecs = {"none", "twobit:threshold=0.005"};
  o.steps = 312;
  o.shorthands = {{"--warmup-steps", "warmup_steps", "20"}, {"--delay-steps", "delay_steps", "4"},
                  {"--post-local", "post_local", "10"}};
  const MachineConstants k = busy_machine();
  ProfileBook book;
  const auto rows = advise(o, book, k);
  ASSERT_GE(rows.size(), 10u);

  int i = 0;
  for (const auto& r : rows) {
    const fs::path run = dir / ("run" + std::to_string(i++));
    fs::create_directories(run);
    std::ofstream(run / "summary.json") << nlohmann::json{
        {"algo", r.algo}, {"topology", r.topology}, {"np", r.workers}, {"servers", r.servers},
        {"model", profile}, {"batch", 64}, {"link", "700 Mbps, 50 us"}, {"codec", r.codec},
        {"iterations", 312}, {"resumed_from", 0}, {"samples_per_s", 1000.0}}.dump();
    std::ofstream(run / "advise_run.json")
        << nlohmann::json{{"set", "validation"}, {"warmup_steps", 20}, {"delay_steps", 4}, {"post_local", 10}}.dump();
  }
  const auto runs = read_runs({dir.string()});
  ASSERT_EQ(runs.size(), rows.size());
  const auto validated = validate_runs(runs, book, k);
  ASSERT_EQ(validated.size(), rows.size());
  for (const auto& v : validated) {
    const auto row = std::find_if(rows.begin(), rows.end(), [&](const AdviseRow& r) {
      // The record carries the run's whole spec (the side file's post_local folded in), the row its name.
      return r.algo == train::algo_name(v.run.algo) && r.topology == v.run.topology && r.codec == v.run.codec;
    });
    ASSERT_NE(row, rows.end()) << v.run.algo << " " << v.run.topology << " " << v.run.codec;
    SCOPED_TRACE(v.run.algo + " " + v.run.topology + " " + v.run.codec);
    EXPECT_EQ(v.prediction.samples_per_s, row->prediction.samples_per_s);
    EXPECT_EQ(v.prediction.comm_fraction, row->prediction.comm_fraction);
    EXPECT_EQ(v.prediction.iteration_s, row->prediction.iteration_s);
    EXPECT_EQ(v.prediction.steps, 312);
  }
  // Uncompressed rows take no measured codec time: a second process (a new book) agrees too.
  ProfileBook other;
  const auto again = validate_runs(runs, other, k);
  for (std::size_t j = 0; j < again.size(); ++j) {
    if (!other.codec(again[j].run.codec, other.model(profile, 64)).compressed) {
      EXPECT_EQ(again[j].prediction.samples_per_s, validated[j].prediction.samples_per_s) << again[j].run.algo;
    }
  }
  fs::remove_all(dir);
}

// The speedup's baseline is S-SGD in fp32 even when --codecs does not list none (a table for
// one codec, as a user checking a run with that codec asks for it): same speedups as the full table.
TEST(ProjectionAndValidation, SpeedupBaselineWithoutNoneInTheCodecs) {
  const fs::path dir = temp_dir("baseline");
  const std::string profile = (dir / "m.json").string();
  save_model_profile(synthetic_model("m", {100000, 300000, 1000}, 0.02, 0.02, 0.001), profile);
  AdviseOptions o;
  o.model = profile;
  o.workers = {4};
  o.bandwidths = {125e6};
  o.codecs = {"fp16"};
  ProfileBook book;
  const auto only = advise(o, book, busy_machine());
  o.codecs = {"none", "fp16"};
  const auto full = advise(o, book, busy_machine());
  int compared = 0;
  for (const auto& r : only)
    for (const auto& f : full)
      if (r.algo == f.algo && r.topology == f.topology && r.codec == f.codec) {
        EXPECT_EQ(r.speedup, f.speedup) << r.algo << " " << r.topology << " " << r.codec;
        ++compared;
      }
  EXPECT_EQ(compared, static_cast<int>(only.size()));
  fs::remove_all(dir);
}

// A run of N iterations whose first W are S-SGD: time W T_ssgd + (N - W) T + overhead, waits
// W (T_ssgd - c_ssgd) + (N - W)(T - c) + overhead, both from the steady predictions.
TEST(ProjectionAndValidation, ARunCountsItsWarmupAndItsWaits) {
  const ModelProfile m = synthetic_model("m", {100000, 300000, 1000}, 0.02, 0.02, 0.001);
  const MachineConstants k = busy_machine();
  Scenario sc = testing::scenario(m, 3, 1, train::Topology::kParameterServer, 87.5e6);
  const Prediction steady = predict("ssdsgd:warmup_steps=20", sc, k);
  const Prediction base = predict("ssgd", sc, k);
  ASSERT_EQ(steady.steps, 0);
  sc.steps = 312;
  const Prediction run = predict("ssdsgd:warmup_steps=20", sc, k);
  const double total = 20 * base.iteration_s + 292 * steady.iteration_s + k.run_overhead_s;
  const double waits = 20 * base.comm_fraction * base.iteration_s + 292 * steady.comm_fraction * steady.iteration_s +
                       k.run_overhead_s;
  EXPECT_NEAR(run.samples_per_s, 3 * 64 * 312 / total, 1e-9 * run.samples_per_s);
  EXPECT_NEAR(run.comm_fraction, waits / total, 1e-12);
  EXPECT_EQ(run.iteration_s, steady.iteration_s);
  // The warm-up is slower and waits more: the run is slower and waits more than its steady state.
  EXPECT_LT(run.samples_per_s, steady.samples_per_s);
  EXPECT_GT(run.comm_fraction, steady.comm_fraction);
}

// Link-bound SSD-SGD with 3 workers on one server: every iteration each worker's push shares
// the server's ingress with the two others (3 S / B), every 4th a pull's replies share its
// egress (3 S / B), and the communication thread runs them in turn:
//   T = 3 S/B + alpha + (3 S/B + 2 alpha)/4.
// (The former model took the worker's own NIC for the push, S/B, and let the directions overlap.)
TEST(DelayedCost, TheCommThreadCarriesIncastPushesAndPullsInTurn) {
  const ModelProfile m = synthetic_model("m", {421642}, 1e-4, 1e-4);
  MachineConstants k;  // no copies, no message cost, no run overhead
  k.cores = 64;
  Scenario sc = testing::scenario(m, 3, 1, train::Topology::kParameterServer, 87.5e6, 50e-6);
  const double S = 4.0 * 421642, B = 87.5e6;
  const double expect = 3 * S / B + 50e-6 + (3 * S / B + 100e-6) / 4;
  const Prediction p = predict("ssdsgd:delay_steps=4", sc, k);
  EXPECT_NEAR(p.iteration_s, expect, 1e-12);
  // Compute is 0.2 ms of it: the worker waits the rest.
  EXPECT_NEAR(p.comm_fraction, 1 - 2e-4 / expect, 1e-9);
  EXPECT_NEAR(predict("odsgd", sc, k).iteration_s, 2 * (3 * S / B) + 150e-6, 1e-12);
}

// The calibration names the profiles it was fitted with, relative to its own file; a book on
// that directory reads the stored profile instead of measuring (so two calls agree bit for bit).
TEST(ProfileBook, ReadsTheCalibrationsProfiles) {
  const fs::path dir = temp_dir("calibration");
  fs::create_directories(dir / "profiles");
  ModelProfile cnn = synthetic_model("cnn", {288, 32, 401408}, 0.0174, 0.0159, 0.0005);
  cnn.compute_noise = 0.03;
  save_model_profile(cnn, (dir / "profiles" / "cnn_b64.json").string());
  std::ofstream(dir / "calibration.json")
      << nlohmann::json{{"constants", constants_to_json(busy_machine())}, {"profiles", "profiles"}}.dump();
  const CalibrationFile f = load_calibration((dir / "calibration.json").string());
  EXPECT_EQ(fs::path(f.profiles_dir), (dir / "profiles").lexically_normal());
  EXPECT_EQ(f.constants.run_overhead_s, 0.3);
  ProfileBook book(ProfileBookOptions{f.profiles_dir, false});
  const ModelProfile& got = book.model("cnn", 64);
  EXPECT_EQ(got.forward_s, cnn.forward_s);
  EXPECT_EQ(got.compute_noise, 0.03);
  EXPECT_EQ(book.origin("cnn", 64), f.profiles_dir + "/cnn_b64.json");
  std::ofstream(dir / "calibration.json")
      << nlohmann::json{{"constants", constants_to_json(busy_machine())}, {"profiles", 3}}.dump();
  EXPECT_THROW(load_calibration((dir / "calibration.json").string()), FormatError);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ferry::advise
