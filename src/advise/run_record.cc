#include "advise/run_record.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/excerpt.h"
#include "core/units.h"
#include "train/strategy.h"

namespace ferry::advise {
namespace {

namespace fs = std::filesystem;

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  if (!in) FERRY_THROW(IoError, "cannot read ", p.string());
  std::stringstream text;
  text << in.rdbuf();
  auto j = nlohmann::json::parse(text.str(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) FERRY_THROW(FormatError, p.string(), " is not a JSON object");
  return j;
}

template <typename T>
T need(const nlohmann::json& j, const char* key, const fs::path& p) {
  if (!j.contains(key)) FERRY_THROW(FormatError, p.string(), " lacks the field '", key, "'");
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    FERRY_THROW(FormatError, p.string(), ": field '", key, "' has the wrong type");
  }
}

// A link shaped by the kernel (scripts/cluster.sh): tbf counts every byte of a frame from the
// Ethernet header on, so of a full 1,514-byte frame 1,448 are TCP payload (docs/cluster.md,
// "What a rate carries"); the one-way latency is half the measured 20 us round trip between two
// hosts of the cluster.
constexpr double kTbfPayloadShare = 1448.0 / 1514.0;
constexpr double kClusterOneWayS = 10e-6;

RunRecord read_run(const fs::path& summary) {
  const auto j = read_json(summary);
  RunRecord r;
  r.dir = summary.parent_path().string();
  r.algo = need<std::string>(j, "algo", summary);
  r.topology = need<std::string>(j, "topology", summary);
  r.model = need<std::string>(j, "model", summary);
  r.codec = need<std::string>(j, "codec", summary);
  r.link = need<std::string>(j, "link", summary);
  r.workers = need<int>(j, "np", summary);
  r.servers = need<int>(j, "servers", summary);
  r.batch = need<std::int64_t>(j, "batch", summary);
  r.steps = need<std::int64_t>(j, "iterations", summary) - j.value("resumed_from", std::int64_t{0});
  r.samples_per_s = need<double>(j, "samples_per_s", summary);
  r.comm_wait_fraction = j.value("comm_wait_fraction", 0.0);
  r.bytes_sent_per_worker = j.value("bytes_sent_per_worker", 0.0);
  // comm::describe writes "1 Gbps, 50 us" or "none".
  if (r.link != "none" && !r.link.empty()) {
    std::string compact;
    for (char ch : r.link)
      if (ch != ' ') compact += ch;
    const BandwidthLatency bl = parse_bandwidth_latency(compact);
    r.bandwidth_bytes_per_s = bl.bandwidth_bytes_per_s;
    r.latency_s = bl.latency_s;
  }
  const fs::path side = summary.parent_path() / "advise_run.json";
  if (fs::exists(side)) {
    const auto s = read_json(side);
    r.set = s.value("set", std::string());
    // Options that are keys of the algorithm's spec join it (the delayed algorithms' warmup_steps,
    // delay_steps, correction_steps, threshold; localsgd's sync_every, post_local; wfbp's
    // bucket_mb); another algorithm's keys are left out.
    std::vector<train::SpecShorthand> keys;
    for (const char* key :
         {"warmup_steps", "delay_steps", "correction_steps", "threshold", "sync_every", "post_local", "bucket_mb"})
      if (s.contains(key)) keys.push_back({side.string() + ": " + key, key, s.at(key).dump()});
    if (!keys.empty()) {
      train::register_builtin_strategies();
      r.algo = train::fold_shorthands(r.algo, keys);
    }
    if (s.contains("kernel_rate")) {
      const std::string rate = s.value("kernel_rate", std::string());
      try {
        r.bandwidth_bytes_per_s = parse_bandwidth_bytes_per_s(rate) * kTbfPayloadShare;
      } catch (const InvalidArgument& e) {
        FERRY_THROW(FormatError, side.string(), ": kernel_rate: ", e.what());
      }
      r.latency_s = kClusterOneWayS;
      r.link = "kernel " + rate;
    }
  }
  return r;
}

}  // namespace

std::vector<RunRecord> read_runs(const std::vector<std::string>& roots) {
  std::vector<fs::path> files;
  for (const auto& root : roots) {
    if (!fs::exists(root)) FERRY_THROW(IoError, "no such run directory ", root);
    if (fs::is_regular_file(root)) {
      files.emplace_back(root);
      continue;
    }
    const std::size_t before = files.size();
    for (const auto& e : fs::recursive_directory_iterator(root))
      if (e.is_regular_file() && e.path().filename() == "summary.json") files.push_back(e.path());
    // A folder without runs validates nothing: an empty table that exits 0 reads as a pass.
    if (files.size() == before)
      FERRY_THROW(InvalidArgument, "no runs found in '", excerpt(root), "' (no summary.json below it)");
  }
  std::sort(files.begin(), files.end());
  std::vector<RunRecord> runs;
  for (const auto& f : files) runs.push_back(read_run(f));
  return runs;
}

}  // namespace ferry::advise
