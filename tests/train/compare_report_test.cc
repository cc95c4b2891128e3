// compare.csv and compare.md of a fixed set of results, byte for byte: the report's format is
// what users' scripts read, so a change of the writer must not change a byte of it.
#include "train/compare.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace ferry::train {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Written by the writer before it moved to core/report.h, for fixed_results() below.
constexpr const char* kGoldenCsv = R"(link,algo,codec,topology,samples_per_s,speedup_vs_ssgd,time_to_target_s,final_test_acc,bytes_sent_per_worker,comm_wait_fraction,iteration_ms,iteration_vs_compute_only,wall_s,exit_code
"1Gbps,50us",ssgd,none,ps,1000.5,1,1.25,0.8125,1234567,0.25,50,4,2,0
"1Gbps,50us",cdsgd,"dgc:ratio=0.01,momentum=0.9",ps,1500.25,1.5,,0.75,1234567,0.25,37.5,3,1.5,0
"1Gbps,50us",compute-only,none,ps,3000,2.999,,0.5,1234567,0.25,12.5,1,0.5,0
10Gbps,ssgd,none,ps,2001,1,1.25,0.8125,1234567,0.25,25,4,1,0
10Gbps,cdsgd,"dgc:ratio=0.01,momentum=0.9",ps,3000.5,1.5,,0.75,1234567,0.25,18.75,3,0.75,0
10Gbps,compute-only,none,ps,6000,2.999,,0.5,1234567,0.25,6.25,1,0.25,0
10Gbps,asgd,none,ps,,,,,,,,,,3
)";
constexpr const char* kGoldenMd = R"(| link | algo | codec | samples/s | speedup vs ssgd | time to 80.0 % (s) | final acc % | MB sent/worker | comm wait % | iteration vs compute-only |
|---|---|---|---:|---:|---:|---:|---:|---:|---:|
| 1Gbps,50us | ssgd | none | 1000 | 1.00 | 1.2 | 81.25 | 1.2 | 25 | 4.00 |
| 1Gbps,50us | cdsgd | dgc:ratio=0.01,momentum=0.9 | 1500 | 1.50 | not reached | 75.00 | 1.2 | 25 | 3.00 |
| 1Gbps,50us | compute-only | none | 3000 | 3.00 | not reached | 50.00 | 1.2 | 25 | 1.00 |
| 10Gbps | ssgd | none | 2001 | 1.00 | 1.2 | 81.25 | 1.2 | 25 | 4.00 |
| 10Gbps | cdsgd | dgc:ratio=0.01,momentum=0.9 | 3000 | 1.50 | not reached | 75.00 | 1.2 | 25 | 3.00 |
| 10Gbps | compute-only | none | 6000 | 3.00 | not reached | 50.00 | 1.2 | 25 | 1.00 |
| 10Gbps | asgd | none |  |  | not reached |  |  |  |  |
)";

CompareResult result(const std::string& algo, const std::string& codec, const std::string& link, double sps,
                     double wall_s, double acc) {
  CompareResult r;
  r.config = {algo, codec, "ps", link, algo + "-" + link.substr(0, 2)};
  r.summary = {{"samples_per_s", sps}, {"wall_s", wall_s}, {"iterations", 40}, {"test_acc", acc},
               {"bytes_sent_per_worker", 1234567.0}, {"comm_wait_fraction", 0.25}};
  r.quality = {{0.5, 0.6}, {1.25, acc}};
  return r;
}

std::vector<CompareResult> fixed_results() {
  std::vector<CompareResult> rs;
  for (const std::string link : {"1Gbps,50us", "10Gbps"}) {
    const double f = link == "10Gbps" ? 2 : 1;
    rs.push_back(result("ssgd", "none", link, 1000.5 * f, 2.0 / f, 0.8125));
    rs.push_back(result("cdsgd", "dgc:ratio=0.01,momentum=0.9", link, 1500.25 * f, 1.5 / f, 0.75));
    rs.push_back(result("compute-only", "none", link, 3000 * f, 0.5 / f, 0.5));
  }
  CompareResult failed;  // no summary: every figure unknown
  failed.config = {"asgd", "none", "ps", "10Gbps", "asgd@10Gbps"};
  failed.exit_code = 3;
  rs.push_back(failed);
  return rs;
}

TEST(CompareReport, CsvAndMarkdownAreByteForByteTheDocumentedFormat) {
  const fs::path dir = fs::temp_directory_path() / ("ferry_compare_report_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const CompareReport report = write_compare_report(dir.string(), fixed_results(), QualityTarget{false, 0.8});
  EXPECT_EQ(slurp(dir / "compare.csv"), std::string(kGoldenCsv));
  EXPECT_EQ(report.markdown, std::string(kGoldenMd));
  EXPECT_EQ(slurp(dir / "compare.md").find("# ferry compare\n\nTarget test accuracy 80.0 % ("), 0u);
  ASSERT_EQ(report.plots.size(), 1u);
  EXPECT_EQ(report.plots[0].script, (dir / "plots.gp").string());
  EXPECT_TRUE(fs::exists(dir / "plots.gp"));
  // Two links: the speedup-against-bandwidth data, one file per configuration label.
  EXPECT_EQ(slurp(dir / "speedup_cdsgd_dgc_ratio_0.01_momentum_0.9.dat"), "1,1.5\n10,1.5\n");
  EXPECT_EQ(slurp(dir / "samples_per_s.dat"),
            "0,ssgd,1000.5\n1,cdsgd+dgc:ratio=0.01,momentum=0.9,1500.25\n2,compute-only,3000\n");
  fs::remove_all(dir);
}

// A perplexity target: reached when the perplexity falls to it, read from each evaluation's
// test_loss (perplexity = exp(loss)), and the columns say perplexity.
TEST(CompareReport, PerplexityTargetIsReachedFromAbove) {
  const fs::path dir = fs::temp_directory_path() / ("ferry_compare_ppl_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  {
    std::ofstream m(dir / "metrics.jsonl");
    m << R"({"t": 1.0, "test_acc": 0.1, "test_loss": 3.0})" << '\n'   // ppl 20.1
      << R"({"t": 2.0, "test_acc": 0.2, "test_loss": 2.0})" << '\n'   // ppl 7.39
      << R"({"t": 3.0, "test_acc": 0.3, "test_loss": 1.5})" << '\n';  // ppl 4.48
    std::ofstream(dir / "summary.json") << R"({"samples_per_s": 10, "test_acc": 0.3, "test_loss": 1.5})";
  }
  const QualityTarget ppl{true, 8.0};
  CompareResult r;
  r.config = {"ssgd", "none", "ps", "1Gbps", "ssgd"};
  load_compare_result(dir.string(), ppl, r);
  ASSERT_EQ(r.quality.size(), 3u);
  EXPECT_NEAR(r.quality[0].second, std::exp(3.0), 1e-9);
  EXPECT_EQ(time_to_target(r, ppl), 2.0);
  EXPECT_TRUE(std::isnan(time_to_target(r, QualityTarget{true, 4.0})));
  const CompareReport report = write_compare_report(dir.string(), {r}, ppl);
  EXPECT_NE(report.markdown.find("time to ppl 8.00 (s)"), std::string::npos) << report.markdown;
  EXPECT_NE(report.markdown.find("final ppl"), std::string::npos) << report.markdown;
  EXPECT_NE(slurp(dir / "compare.csv").find("final_test_perplexity"), std::string::npos);
  EXPECT_NE(slurp(dir / "plots.gp").find("perplexity_vs_time.png"), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ferry::train
