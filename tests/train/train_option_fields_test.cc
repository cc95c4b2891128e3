// The option table (train/train_option_fields.h): the names every place uses are those users,
// scripts and checkpoints know; the job's JSON round-trips every option it carries; the Python
// keywords are typed and checked; summary.json writes what the table says.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "core/error.h"
#include "train/run_summary.h"
#include "train/train_job.h"
#include "train/train_option_fields.h"
#include "train/train_options.h"

namespace ferry::train {
namespace {

TrainOptions ps_options() {
  TrainOptions o;
  o.algo = "ssgd";
  o.topology = "ps";
  o.num_workers = 2;
  o.num_servers = 1;
  o.model = "mlp";
  o.codec = "twobit";
  o.pull_codec = "fp16";
  o.link = comm::parse_link_spec("1Gbps,50us");
  o.batch = 16;
  o.lr = 0.125f;
  o.deterministic = true;
  o.keep_checkpoints = 3;
  return o;
}

TEST(OptionTable, RowsAreWellFormed) {
  std::set<std::string> flags, keywords;
  for (const OptionField& f : train_option_fields()) {
    EXPECT_EQ(std::string(f.flag).rfind("--", 0), 0u) << f.flag;
    EXPECT_TRUE(flags.insert(f.flag).second) << "two rows with " << f.flag;
    EXPECT_TRUE(f.in(OptionPlace::kFlag)) << f.flag << ": every option is a flag of ferry train";
    EXPECT_TRUE(!f.in(OptionPlace::kCompare) || f.in(OptionPlace::kFlag)) << f.flag;
    EXPECT_EQ(std::holds_alternative<std::monostate>(f.member), f.parse != nullptr) << f.flag;
    if (f.in(OptionPlace::kPython)) {
      EXPECT_TRUE(keywords.insert(f.keyword()).second) << f.keyword();
    }
  }
  // The JSON keys of one place are distinct.
  for (OptionPlace place : {OptionPlace::kConfig, OptionPlace::kJob, OptionPlace::kSummary}) {
    std::set<std::string> keys;
    for (const OptionField& f : train_option_fields())
      if (f.in(place)) {
        EXPECT_TRUE(keys.insert(f.key).second) << f.key;
      }
  }
}

// The names users, bench/ scripts, docs and written checkpoints know: the table must keep them.
TEST(OptionTable, EveryPlaceKeepsItsNames) {
  const TrainJob job = make_train_job(ps_options());
  const std::set<std::string> config = {"algo", "topology", "np", "servers", "model", "epochs", "max_steps",
                                        "batch", "lr", "momentum", "weight_decay", "link_bytes_per_s",
                                        "link_latency_s", "codec", "seed", "data", "train_limit", "test_limit",
                                        "checkpoint_every", "deterministic", "max_bad_steps"};
  for (const auto& k : config) EXPECT_TRUE(job.config.contains(k)) << "config lacks " << k;
  const std::set<std::string> job_keys = {
      "algo", "topology", "workers", "servers", "lr", "momentum", "weight_decay", "rescale", "codec",
      "pull_codec", "batch", "link_bytes_per_s", "link_latency_s", "deterministic", "checkpoint_root",
      "checkpoint_every", "keep_checkpoints", "config", "resume_dir", "resume_iterations"};
  const nlohmann::json j = job.to_json();
  for (const auto& k : job_keys) EXPECT_TRUE(j.contains(k)) << "the job lacks " << k;
  const std::set<std::string> keywords = {"algo",  "topology",       "batch",            "link",  "codec",
                                          "compress_pull", "checkpoint_dir", "keep_checkpoints", "resume"};
  const std::vector<std::string> all = option_keywords();
  for (const auto& k : keywords)
    EXPECT_NE(std::find(all.begin(), all.end(), k), all.end()) << "no Python keyword " << k;
  for (const char* flag : {"--np", "--servers", "--wd", "--compress-pull", "--data", "--out", "--threads",
                           "--no-progress", "--stall-timeout", "--inject-nan-at", "--link", "--checkpoint-every"}) {
    bool found = false;
    for (const OptionField& f : train_option_fields()) found |= std::string(f.flag) == flag;
    EXPECT_TRUE(found) << flag;
  }
}

TEST(OptionTable, TheJobRoundTripsItsOptionsResolved) {
  const TrainJob job = make_train_job(ps_options());
  EXPECT_EQ(job.options.topology, "ps");
  EXPECT_EQ(job.options.codec, canonical_codec(ps_options()));
  EXPECT_EQ(job.options.pull_codec, canonical_pull_codec(ps_options()));
  EXPECT_EQ(job.world().num_workers, 2);
  EXPECT_EQ(job.world().num_servers, 1);
  const TrainJob back = TrainJob::from_json(nlohmann::json::parse(job.to_json().dump()));
  EXPECT_EQ(back.to_json(), job.to_json());
  EXPECT_EQ(back.topology(), Topology::kParameterServer);
  EXPECT_EQ(back.sgd().lr, 0.125f);
  EXPECT_EQ(back.options.batch, 16);
  EXPECT_EQ(back.options.keep_checkpoints, 3);
  EXPECT_TRUE(back.options.deterministic);
  EXPECT_EQ(back.options.link.latency_s, job.options.link.latency_s);
  nlohmann::json missing = job.to_json();
  missing.erase("keep_checkpoints");
  try {
    TrainJob::from_json(missing);
    ADD_FAILURE() << "a job without keep_checkpoints was read";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("keep_checkpoints"), std::string::npos) << e.what();
  }
}

TEST(OptionTable, TheConfigurationRecordsTheCodecCanonicalAndTheOtherOptionsAsGiven) {
  TrainOptions o = ps_options();
  o.topology = "";  // the algorithm's default: recorded as given
  o.num_servers = 1;
  const nlohmann::json config = job_config(o);
  EXPECT_EQ(config["topology"], "");
  EXPECT_EQ(config["codec"], canonical_codec(o));
  EXPECT_EQ(config["np"], 2);
  EXPECT_DOUBLE_EQ(config["link_bytes_per_s"].get<double>(), o.link.bandwidth_bytes_per_s);
}

TEST(OptionTable, TheSummaryWritesTheResolvedOptions) {
  TrainOptions o = ps_options();
  o.pull_codec = "";
  o.link = comm::LinkOptions{};
  const TrainJob job = make_train_job(o);
  RunSummaryInput in;
  in.options = &job.options;
  const nlohmann::json s = make_run_summary(in, {WorkerStats{}});
  EXPECT_EQ(s["pull_codec"], "fp32");
  EXPECT_EQ(s["link"], "none");
  EXPECT_EQ(s["topology"], "ps");
  EXPECT_EQ(s["servers"], 1);
  EXPECT_EQ(s["np"], 2);
  EXPECT_EQ(s["codec"], job.options.codec);
  EXPECT_EQ(s["deterministic"], true);
  EXPECT_FALSE(s.contains("momentum"));  // the table leaves it out of summary.json
}

TEST(OptionTable, PythonKeywordsAreTypedAndChecked) {
  TrainOptions o;
  apply_keywords({{"codec", "topk:ratio=0.1"}, {"keep_checkpoints", 4}, {"link", "100Mbps,1ms"}, {"batch", 8}}, o);
  EXPECT_EQ(o.codec, "topk:ratio=0.1");
  EXPECT_EQ(o.keep_checkpoints, 4);
  EXPECT_EQ(o.batch, 8);
  EXPECT_TRUE(o.link.enabled());
  EXPECT_DOUBLE_EQ(o.link.latency_s, 1e-3);
  apply_keywords({{"compress_pull", "fp16"}}, o);
  EXPECT_EQ(o.pull_codec, "fp16");
  auto refused = [](const nlohmann::json& keywords, const std::string& want) {
    TrainOptions t;
    try {
      apply_keywords(keywords, t);
      ADD_FAILURE() << keywords.dump() << " accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  };
  refused({{"keep_checkpoints", true}}, "keep_checkpoints=true: expected an int");
  refused({{"batch", 1.5}}, "batch=1.5: expected an int");
  refused({{"codec", 3}}, "codec=3: expected a string");
  refused({{"lr", 0.1}}, "unknown option 'lr'");  // the wrapped torch optimizer's
  refused({{"link", "1Gbs"}}, "1Gbs");
}

TEST(OptionTable, AnEmptyCodecIsTheAlgorithmsDefault) {
  TrainOptions o;
  o.algo = "cdsgd:threshold=0.25";
  o.num_servers = 1;
  EXPECT_EQ(codec_or_default(o), "twobit:threshold=0.25");
  EXPECT_EQ(canonical_codec(o), canonical_codec([&] { auto t = o; t.codec = "twobit:threshold=0.25"; return t; }()));
  o.algo = "ssgd";
  EXPECT_EQ(canonical_codec(o), canonical_codec([&] { auto t = o; t.codec = "none"; return t; }()));
}

// --test-option was added as a field (train_options.h) and a row (train_option_fields.cc) only.
TEST(OptionTable, TheTestOnlyOptionReachesEveryPlace) {
  TrainOptions o = ps_options();
  o.test_option = 7;
  const TrainJob job = make_train_job(o);
  EXPECT_EQ(job.to_json()["test_option"], 7);
  EXPECT_EQ(TrainJob::from_json(job.to_json()).options.test_option, 7);
  EXPECT_EQ(job.config["test_option"], 7);
  RunSummaryInput in;
  in.options = &job.options;
  EXPECT_EQ(make_run_summary(in, {WorkerStats{}})["test_option"], 7);
  TrainOptions from_python;
  apply_keywords({{"test_option", 9}}, from_python);
  EXPECT_EQ(from_python.test_option, 9);
  const OptionField* row = nullptr;
  for (const OptionField& f : train_option_fields())
    if (std::string(f.flag) == "--test-option") row = &f;
  ASSERT_NE(row, nullptr);
  EXPECT_TRUE(row->in(OptionPlace::kFlag) && row->in(OptionPlace::kCompare));
  EXPECT_EQ(row->keyword(), "test_option");
}

}  // namespace
}  // namespace ferry::train
