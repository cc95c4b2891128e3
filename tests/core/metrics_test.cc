#include "core/metrics.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace ferry {
namespace {

TEST(JsonlWriter, OneParsableObjectPerLine) {
  auto dir = std::filesystem::temp_directory_path() / "ferry_metrics_test";
  std::filesystem::remove_all(dir);
  {
    JsonlWriter w((dir / "sub" / "m.jsonl").string());
    w.write({{"iter", 1}, {"loss", 0.5}});
    w.write({{"iter", 2}, {"loss", 0.25}});
  }
  std::ifstream in(dir / "sub" / "m.jsonl");
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    EXPECT_EQ(j["iter"].get<int>(), ++n);
  }
  EXPECT_EQ(n, 2);
}

TEST(JsonlWriter, UnwritablePathIsIoError) {
  EXPECT_THROW(JsonlWriter("/proc/ferry_cannot/x.jsonl"), IoError);
}

}  // namespace
}  // namespace ferry
