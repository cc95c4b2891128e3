// Bad input to the cost models: profile files, device profiles, runs.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "advise/codec_cost.h"
#include "advise/device_profile.h"
#include "advise/model_profile.h"
#include "advise/run_record.h"
#include "core/error.h"
#include "train/delayed_ps_options.h"
#include "test_models.h"

namespace ferry::advise {
namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / ("ferry_advise_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(path) << text;
  return path.string();
}

TEST(ModelProfileFile, RoundTripsAndAcceptsABareSizeList) {
  const ModelProfile m = testing::synthetic_model("m", {10, 20, 30}, 0.1, 0.2, 0.01);
  const std::string path = write_temp("roundtrip.json", to_json(m).dump());
  const ModelProfile back = load_model_profile(path);
  EXPECT_EQ(back.parameters(), 60u);
  EXPECT_DOUBLE_EQ(back.compute_s(64), m.compute_s(64));
  EXPECT_DOUBLE_EQ(back.compute_s(128), 2 * 0.3 + 0.01);
  const std::string bare = write_temp(
      "bare.json", R"({"name": "r", "batch": 32, "forward_s": 0.01, "backward_s": 0.02, "tensors": [100, 200, 300]})");
  const ModelProfile b = load_model_profile(bare);
  ASSERT_EQ(b.tensors.size(), 3u);
  EXPECT_EQ(b.tensors[2].numel, 300u);
  EXPECT_DOUBLE_EQ(b.tensors[0].backward_ready, 1.0);  // the first tensor's gradient comes last
}

TEST(ModelProfileFile, RefusesMissingCorruptAndOutOfRangeFiles) {
  EXPECT_THROW(load_model_profile("/nonexistent/profile.json"), IoError);
  EXPECT_THROW(load_model_profile(write_temp("corrupt.json", "{ not json")), FormatError);
  EXPECT_THROW(load_model_profile(write_temp("nofield.json", R"({"name": "x", "batch": 8})")), FormatError);
  EXPECT_THROW(load_model_profile(write_temp(
                   "neg.json", R"({"name": "x", "batch": 8, "forward_s": 0.1, "backward_s": 0.1, "tensors": [-5]})")),
               FormatError);
  EXPECT_THROW(load_model_profile(write_temp(
                   "empty.json", R"({"name": "x", "batch": 8, "forward_s": 0.1, "backward_s": 0.1, "tensors": []})")),
               InvalidArgument);
  EXPECT_THROW(load_model_profile(write_temp(
                   "time.json", R"({"name": "x", "batch": 8, "forward_s": -1, "backward_s": 0.1, "tensors": [5]})")),
               InvalidArgument);
}

TEST(DeviceProfiles, KnownNamesFilesAndErrors) {
  for (const auto& d : builtin_device_profiles()) EXPECT_FALSE(d.source.empty()) << d.name;
  EXPECT_TRUE(device_profile("local").shared_cores);
  EXPECT_GT(device_profile("v100").sustained_tflops, device_profile("k80").sustained_tflops);
  EXPECT_THROW(device_profile("no-such-gpu"), InvalidArgument);
  EXPECT_THROW(device_profile("/nonexistent/device.json"), IoError);
  EXPECT_THROW(device_profile(write_temp("dev.json", R"({"name": "g"})")), FormatError);
  EXPECT_THROW(device_profile(write_temp("dev0.json", R"({"name": "g", "sustained_tflops": 0})")), InvalidArgument);
  EXPECT_EQ(device_profile(write_temp("dev1.json", R"({"name": "g", "sustained_tflops": 3})")).sustained_tflops, 3);
}

TEST(DeviceProfiles, TimesScaleByTheDevicesSpeed) {
  ModelProfile m = testing::synthetic_model("m", {1000}, 0.010, 0.020);
  m.device = "v100";
  Scenario sc = testing::scenario(m, 1, 0, train::Topology::kAllreduce, 0, 0);
  sc.device = device_profile("k80");
  const double k80 = predict("compute-only", sc, MachineConstants{}).iteration_s;
  EXPECT_NEAR(k80, 0.030 * device_profile("v100").sustained_tflops / device_profile("k80").sustained_tflops, 1e-12);
  sc.device = device_profile("local");  // a GPU profile cannot be projected onto these cores
  EXPECT_THROW(predict("compute-only", sc, MachineConstants{}), InvalidArgument);
}

TEST(CodecCost, PayloadBytesOfFixedSizeCodecs) {
  const std::vector<std::size_t> numels = {1000, 64};
  const CodecCost none = measure_codec_cost("none", numels, {});
  EXPECT_FALSE(none.compressed);
  EXPECT_EQ(none.push_bytes, 4.0 * 1064);
  const CodecCost fp16 = measure_codec_cost("fp16", numels, {});
  EXPECT_TRUE(fp16.compressed);
  EXPECT_GE(fp16.push_bytes, 2.0 * 1064);
  EXPECT_LT(fp16.push_bytes, 4.0 * 1064);
  const CodecCost twobit = measure_codec_cost("twobit:threshold=0.005", numels, {});
  EXPECT_LT(twobit.push_bytes, 4.0 * 1064 / 8);
  EXPECT_THROW(measure_codec_cost("nosuch", numels, {}), InvalidArgument);
}

TEST(RunRecords, ReadsSummariesAndRefusesBadOnes) {
  const auto dir = std::filesystem::temp_directory_path() / ("ferry_advise_runs_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "a");
  std::ofstream(dir / "a" / "summary.json") << R"({"algo": "ssdsgd", "topology": "ps", "np": 4, "servers": 1,
    "model": "cnn", "batch": 64, "link": "1 Gbps, 50 us", "codec": "none:ef=0", "iterations": 60,
    "samples_per_s": 1234.5})";
  std::ofstream(dir / "a" / "advise_run.json") << R"({"set": "validation", "delay_steps": 8})";
  const auto runs = read_runs({dir.string()});
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].set, "validation");
  EXPECT_EQ(train::SsdSgdOptions::of_spec(runs[0].algo).delay_steps, 8);  // the side file's key joins the spec
  EXPECT_DOUBLE_EQ(runs[0].bandwidth_bytes_per_s, 1.25e8);
  EXPECT_DOUBLE_EQ(runs[0].latency_s, 50e-6);
  // A run on the namespace cluster: the kernel's rate, of which tbf passes 1448/1514 as payload.
  std::filesystem::create_directories(dir / "k");
  std::filesystem::copy_file(dir / "a" / "summary.json", dir / "k" / "summary.json");
  std::ofstream(dir / "k" / "advise_run.json") << R"({"set": "validation", "kernel_rate": "300mbit"})";
  const auto kernel = read_runs({(dir / "k").string()});
  ASSERT_EQ(kernel.size(), 1u);
  EXPECT_DOUBLE_EQ(kernel[0].bandwidth_bytes_per_s, 300e6 / 8 * 1448 / 1514);
  EXPECT_EQ(kernel[0].link, "kernel 300mbit");
  std::ofstream(dir / "k" / "advise_run.json") << R"({"kernel_rate": "300 megabits"})";
  EXPECT_THROW(read_runs({(dir / "k").string()}), FormatError);
  std::filesystem::remove_all(dir / "k");
  std::filesystem::create_directories(dir / "b");
  std::ofstream(dir / "b" / "summary.json") << R"({"algo": "ssgd"})";
  EXPECT_THROW(read_runs({dir.string()}), FormatError);
  EXPECT_THROW(read_runs({"/nonexistent/runs"}), IoError);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ferry::advise
