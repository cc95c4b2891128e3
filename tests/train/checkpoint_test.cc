// Checkpoints (src/train/checkpoint.h): the state file format rejects truncated and corrupted
// files, an incomplete checkpoint directory is never picked up, a mismatched resume is refused,
// and every checkpointable strategy continued from a checkpoint ends with exactly (bit for bit)
// the weights of the uninterrupted run, with stateful codecs too. Threads as ranks, the mlp on
// synthetic data.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>

#include "comm/local/local_communicator.h"
#include "core/error.h"
#include "core/metrics.h"
#include "train/checkpoint.h"
#include "train/data/data_loader.h"
#include "train/data/synthetic_dataset.h"
#include "train/flat_params.h"
#include "train/gradient_codecs.h"
#include "train/models/model.h"
#include "train/optimizer_choice.h"
#include "train/ps_setup.h"
#include "train/strategy.h"
#include "train/train_job.h"
#include "train/train_options.h"
#include "local_training.h"

namespace ferry::train {
namespace {

namespace fs = std::filesystem;

fs::path temp_dir(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("ferry_ckpt_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

TEST(StateFile, RoundTripsRecords) {
  StateWriter w;
  std::vector<float> v = {1.5f, -2.0f, 3.25f};
  w.put("weights", v);
  w.put("empty", std::span<const float>());
  w.put_u64("steps", 42);
  w.put_f64("loss", 0.125);
  const std::vector<std::byte> blob = {std::byte{1}, std::byte{0}, std::byte{255}};
  w.put_bytes("codec_state", blob);
  w.put_bytes("no_bytes", {});
  StateReader r = StateReader::parse(w.bytes(), "test");
  EXPECT_EQ(r.bytes("codec_state"), blob);
  EXPECT_TRUE(r.bytes("no_bytes").empty());
  EXPECT_THROW(r.bytes("steps"), FormatError);  // wrong type
  EXPECT_EQ(r.floats("weights"), v);
  EXPECT_TRUE(r.floats("empty").empty());
  EXPECT_EQ(r.u64("steps"), 42u);
  EXPECT_EQ(r.f64("loss"), 0.125);
  std::vector<float> wrong(2);
  EXPECT_THROW(r.floats_into("weights", wrong), FormatError);  // size mismatch is named
  EXPECT_THROW(r.u64("missing"), FormatError);
  EXPECT_THROW(r.u64("weights"), FormatError);  // wrong type
}

TEST(StateFile, EveryTruncationAndAnyFlippedByteIsRejected) {
  StateWriter w;
  std::vector<float> v(37);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = 0.5f * static_cast<float>(i);
  w.put("weights", v);
  w.put_u64("steps", 7);
  const std::vector<std::byte> bytes = w.bytes();
  for (std::size_t n = 0; n < bytes.size(); ++n)
    EXPECT_THROW(StateReader::parse(std::span(bytes).first(n), "cut"), FormatError) << "truncated to " << n;
  for (std::size_t i = 0; i < bytes.size(); i += 7) {
    std::vector<std::byte> bad = bytes;
    bad[i] ^= std::byte{0x10};
    EXPECT_THROW(StateReader::parse(bad, "flipped"), FormatError) << "byte " << i;
  }
}

TEST(StateFile, WriteFileLeavesNoPartFile) {
  fs::path dir = temp_dir("write");
  StateWriter w;
  w.put_u64("x", 1);
  w.write_file((dir / "a.state").string());
  EXPECT_TRUE(fs::exists(dir / "a.state"));
  EXPECT_FALSE(fs::exists(dir / "a.state.part"));
  EXPECT_EQ(StateReader::read_file((dir / "a.state").string()).u64("x"), 1u);
  EXPECT_THROW(StateReader::read_file((dir / "none.state").string()), IoError);
  fs::remove_all(dir);
}

TrainOptions options_for(const std::string& algo, int np, int servers) {
  TrainOptions o;
  o.algo = algo;
  o.num_workers = np;
  o.num_servers = servers;
  o.model = "mlp";
  return o;
}

nlohmann::json meta_for(const TrainOptions& o, std::int64_t iterations) {
  const WorldLayout w = world_layout(o);
  return {{"format", "ferry-checkpoint-1"},
          {"iterations", iterations},
          {"world", {{"topology", w.num_servers ? "ps" : "allreduce"}, {"workers", w.num_workers},
                     {"servers", w.num_servers}}},
          {"config", job_config(o)}};
}

// A checkpoint directory as ranks leave it: state files in ckpt-N.tmp, then rank 0 finalises.
void write_checkpoint(const fs::path& root, std::int64_t n, const TrainOptions& o) {
  const std::string tmp = checkpoint_tmp_dir(root.string(), n);
  make_dirs(tmp);
  StateWriter w;
  w.put_u64("iterations", static_cast<std::uint64_t>(n));
  w.write_file(worker_state_path(tmp, 0));
  finalize_checkpoint(root.string(), n, meta_for(o, n), 3);
}

TEST(CheckpointDir, OnlyCompleteCheckpointsArePickedAndOldOnesPruned) {
  fs::path root = temp_dir("dir");
  const TrainOptions o = options_for("ssgd", 2, 0);
  EXPECT_THROW(find_checkpoint(root.string()), InvalidArgument);  // none yet
  EXPECT_THROW(find_checkpoint((root / "nowhere").string()), InvalidArgument);
  write_checkpoint(root, 10, o);
  EXPECT_FALSE(fs::exists(checkpoint_tmp_dir(root.string(), 10)));
  EXPECT_EQ(find_checkpoint(root.string()), checkpoint_dir(root.string(), 10));
  EXPECT_EQ(read_checkpoint_meta(find_checkpoint(root.string()))["iterations"], 10);

  // A crash mid-write: a newer .tmp directory with a truncated file and no meta.json.
  const std::string tmp = checkpoint_tmp_dir(root.string(), 20);
  make_dirs(tmp);
  std::ofstream(worker_state_path(tmp, 0)) << "FERRYST1 trunc";
  // A renamed directory without meta.json (written by hand or by another tool) is not complete.
  make_dirs(checkpoint_dir(root.string(), 30));
  EXPECT_EQ(find_checkpoint(root.string()), checkpoint_dir(root.string(), 10));
  EXPECT_THROW(StateReader::read_file(worker_state_path(tmp, 0)), FormatError);

  // Keep 3: after 40, 50, 60 the oldest complete ones go, stale .tmp directories too.
  for (std::int64_t n : {40, 50, 60}) write_checkpoint(root, n, o);
  EXPECT_EQ(find_checkpoint(root.string()), checkpoint_dir(root.string(), 60));
  EXPECT_FALSE(fs::exists(checkpoint_dir(root.string(), 10)));
  EXPECT_FALSE(fs::exists(tmp));
  EXPECT_TRUE(fs::exists(checkpoint_dir(root.string(), 40)));
  // A checkpoint directory named directly.
  EXPECT_EQ(find_checkpoint(checkpoint_dir(root.string(), 50)), checkpoint_dir(root.string(), 50));
  fs::remove_all(root);
}

TEST(CheckpointDir, MismatchedResumeIsRefusedNamingTheSetting) {
  const TrainOptions saved = options_for("ssgd", 4, 1);
  auto saved_meta = meta_for([&] {
    TrainOptions o = saved;
    o.topology = "ps";
    return o;
  }(), 10);
  TrainOptions same = saved;
  same.topology = "ps";
  EXPECT_NO_THROW(check_resumable(saved_meta, job_config(same), world_layout(same), "d"));
  auto refused = [&](TrainOptions o, const std::string& want) {
    try {
      check_resumable(saved_meta, job_config(o), world_layout(o), "d");
      ADD_FAILURE() << "accepted, wanted an error about " << want;
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  };
  TrainOptions o = same;
  o.algo = "asgd";
  refused(o, "--algo ssgd");
  o = same;
  o.model = "cnn";
  refused(o, "--model mlp");
  o = same;
  o.num_workers = 3;
  refused(o, "--np 4 --servers 1");
  o = same;
  o.num_servers = 2;
  refused(o, "world size");
  o = same;
  o.topology = "allreduce";
  o.num_servers = 0;
  refused(o, "--topology ps");
  o = same;
  o.codec = "twobit";
  refused(o, "--codec");
}

TEST(CheckpointOptions, ValidationNamesTheFlag) {
  TrainOptions o = options_for("ssgd", 2, 0);
  o.checkpoint_every = 5;
  EXPECT_THROW(validate(o), InvalidArgument);  // nowhere to write
  o.checkpoint_dir = "/tmp/x";
  EXPECT_NO_THROW(validate(o));
  o = options_for("asgd", 2, 1);
  o.deterministic = true;
  EXPECT_THROW(validate(o), InvalidArgument);
  o = options_for("ssgd", 2, 0);
  o.max_bad_steps = 0;
  EXPECT_THROW(validate(o), InvalidArgument);
  EXPECT_THROW(parse_inject_nan("x", o), InvalidArgument);
  EXPECT_THROW(parse_inject_nan("3,0", o), InvalidArgument);
  parse_inject_nan("3,2", o);
  EXPECT_EQ(o.inject_nan_step, 3);
  EXPECT_EQ(o.inject_nan_count, 2);
}

// Codec state records: a checkpoint of other codecs, of an older version (residuals only) or
// without the record is refused with one FormatError naming the file and what differs.
TEST(CodecStateRecord, MismatchedOrOldRecordsAreRefused) {
  torch::manual_seed(1);
  auto model = make_model("mlp", 3);
  FlatParams params(model->parameters());
  TensorAllreduceCodecs twobit("twobit", params, 0);
  StateWriter w;
  twobit.save_state(w);
  const StateReader saved = StateReader::parse(w.bytes(), "worker-0.state");
  TensorAllreduceCodecs same("twobit", params, 0);
  EXPECT_NO_THROW(same.load_state(saved));
  auto refused = [](TensorAllreduceCodecs& c, const StateReader& in, const std::string& expect) {
    try {
      c.load_state(in);
      ADD_FAILURE() << "accepted; expected an error containing: " << expect;
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find(expect), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("worker-0.state"), std::string::npos) << e.what();
    }
  };
  TensorAllreduceCodecs qsgd("qsgd:ef=1", params, 0);
  refused(qsgd, saved, "saved by codec 'twobit'");
  StateWriter old;
  old.put("residuals", std::vector<float>(params.weights().size(), 0.0f));
  TensorAllreduceCodecs again("twobit", params, 0);
  refused(again, StateReader::parse(old.bytes(), "worker-0.state"), "residuals only");
  StateWriter none;
  none.put_u64("steps", 3);
  refused(again, StateReader::parse(none.bytes(), "worker-0.state"), "no record 'codec_state'");
}

// ---- resume equals the uninterrupted run, bit for bit ----------------------------------------

constexpr int kSteps = 12;
constexpr std::int64_t kBatch = 16;


// Runs iterations [from, to) of `algo` on so.world: when `resume_dir` is set every rank first
// restores its state from it; when `save_dir` is set every rank saves its state there after
// iteration `to` - 1 (servers through the checkpoint barrier). Returns each worker's final
// weights after finish() (only when `finish`).
std::map<int, std::vector<float>> run_segment(const std::string& algo, const StrategyOptions& so, int from, int to,
                                              const std::string& resume_dir, const std::string& save_dir,
                                              bool finish) {
  register_builtin_strategies();
  torch::set_num_threads(1);
  std::mutex mu;
  std::map<int, std::vector<float>> out;
  const WorldLayout world = so.world;
  comm::run_local_ranks(world.num_workers + world.num_servers, [&](comm::Communicator& c) {
    auto model = make_model("mlp", 3);
    const auto& info = strategy_info(algo);
    if (world.is_server(c.rank())) {
      std::vector<std::size_t> numels;
      for (const auto& p : model->parameters()) numels.push_back(p.numel());
      // The server's hook writes into checkpoint_tmp_dir(root, iterations).
      run_parameter_server(c, world, numels, info.server_mode, so.sgd, so.codec, shapes_of(model->parameters()),
                           so.pull_codec, ServerCheckpointing{save_dir, resume_dir});
      return;
    }
    DataLoader loader(testing::small_dataset(), DataLoaderOptions{kBatch, world.num_workers, c.rank(), 5, true});
    FlatParams params(model->parameters());
    auto strategy = info.make(StrategyContext{&c, so});
    strategy->setup(params);
    if (!resume_dir.empty())
      strategy->load_state(StateReader::read_file(worker_state_path(resume_dir, c.rank())), params);
    for (int t = from; t < to; ++t) {
      Batch b = loader.batch(t / loader.steps_per_epoch(), t % loader.steps_per_epoch());
      params.zero_grads();
      torch::nn::functional::cross_entropy(model->forward(b.images), b.labels).backward();
      params.gather_grads();
      strategy->step(params, t);
    }
    if (!save_dir.empty()) {
      StateWriter w;
      strategy->save_state(w, params, to);
      const std::string tmp = checkpoint_tmp_dir(save_dir, to);
      make_dirs(tmp);
      w.write_file(worker_state_path(tmp, c.rank()));
    }
    if (!finish) {
      // Leave like a killed run would, but let the servers end: tell them we are done.
      strategy->finish(params);
      return;
    }
    strategy->finish(params);
    std::lock_guard lock(mu);
    auto w = params.weights();
    out[c.rank()] = std::vector<float>(w.begin(), w.end());
  });
  return out;
}

struct ResumeCase {
  std::string algo;
  int workers;
  int servers;
  std::string codec;
  std::string optimizer = "sgd";  // --optimizer
};

class ResumeTest : public ::testing::TestWithParam<ResumeCase> {};

TEST_P(ResumeTest, ContinuesBitForBit) {
  const ResumeCase& p = GetParam();
  StrategyOptions so;
  so.topology = p.servers > 0 ? Topology::kParameterServer : Topology::kAllreduce;
  so.world = WorldLayout{p.workers, p.servers};
  so.sgd = ps::SgdOptions{0.05f, 0.9f, 1e-4f, 1.0f};
  so.codec = p.codec;
  so.optimizer = canonical_optimizer(p.optimizer);
  so.algo = testing::with_keys(p.algo, {{"warmup_steps", "3"}, {"delay_steps", "2"}, {"correction_steps", "3"}});
  if (algo_name(p.algo) == "localsgd") so.algo = "localsgd:sync_every=3";
  const int cut = 7;  // after warm-up, mid delay / correction / averaging period
  auto whole = run_segment(p.algo, so, 0, kSteps, "", "", true);
  fs::path root = temp_dir("resume_" + algo_name(p.algo) + std::to_string(p.workers) + p.codec);
  run_segment(p.algo, so, 0, cut, "", root.string(), false);
  const std::string ckpt = checkpoint_tmp_dir(root.string(), cut);
  auto resumed = run_segment(p.algo, so, cut, kSteps, ckpt, "", true);
  ASSERT_EQ(whole.size(), static_cast<std::size_t>(p.workers));
  for (const auto& [rank, w] : whole) {
    ASSERT_EQ(resumed.at(rank).size(), w.size());
    std::size_t differ = 0;
    for (std::size_t i = 0; i < w.size(); ++i) differ += w[i] != resumed.at(rank)[i];
    EXPECT_EQ(differ, 0u) << "worker " << rank << ": " << differ << " of " << w.size() << " weights differ";
  }
  fs::remove_all(root);
}

// --compress-pull: a checkpoint holds no pull-codec state (the servers' per-worker encoders and
// last-pulled weights, the workers' replicas). After a resume the first pull of every key is
// fp32, as at the start of a run, so the replicas equal the global weights again: training goes
// on from the same weights up to the pull codec's residual at the cut, not bit for bit.
TEST(ResumeCompressedPulls, ContinuesAfterOneFullPrecisionPull) {
  for (const char* algo : {"ssgd", "ssdsgd"}) {
    StrategyOptions so;
    so.topology = Topology::kParameterServer;
    so.world = WorldLayout{2, 1};
    so.sgd = ps::SgdOptions{0.05f, 0.9f, 1e-4f, 1.0f};
    so.pull_codec = pull_codec_spec("fp16");
    so.algo = testing::with_keys(algo, {{"warmup_steps", "3"}, {"delay_steps", "2"}});
    const int cut = 7;
    auto whole = run_segment(algo, so, 0, kSteps, "", "", true);
    fs::path root = temp_dir(std::string("resume_pull_") + algo);
    run_segment(algo, so, 0, cut, "", root.string(), false);
    auto resumed = run_segment(algo, so, cut, kSteps, checkpoint_tmp_dir(root.string(), cut), "", true);
    ASSERT_EQ(resumed.size(), 2u);
    EXPECT_EQ(resumed.at(0), resumed.at(1)) << algo << ": the workers' final weights differ";
    ASSERT_EQ(resumed.at(0).size(), whole.at(0).size());
    float worst = 0;
    for (std::size_t i = 0; i < whole.at(0).size(); ++i)
      worst = std::max(worst, std::abs(resumed.at(0)[i] - whole.at(0)[i]));
    EXPECT_LT(worst, 1e-3f) << algo;
    fs::remove_all(root);
  }
}

INSTANTIATE_TEST_SUITE_P(Strategies, ResumeTest,
                         ::testing::Values(ResumeCase{"ssgd", 3, 0, "none"}, ResumeCase{"ssgd", 2, 2, "none"},
                                           ResumeCase{"ssgd", 2, 0, "twobit"},
                                           // Codecs with more state than a residual (Codec::save_state):
                                           // random streams, PowerSGD's Q and a warm-up that ends after
                                           // the cut, DGC's momentum and its density schedule.
                                           ResumeCase{"ssgd", 2, 0, "qsgd"},
                                           ResumeCase{"ssgd", 2, 0, "powersgd:rank=2,warmup=9"},
                                           ResumeCase{"ssgd", 2, 0, "dgc:ratio=0.05,warmup=10"},
                                           ResumeCase{"ssgd", 2, 1, "randomk:ratio=0.1"},
                                           ResumeCase{"asgd", 1, 1, "none"},
                                           ResumeCase{"odsgd", 2, 1, "none"}, ResumeCase{"ssdsgd", 3, 1, "none"},
                                           ResumeCase{"cdsgd", 2, 1, "twobit:threshold=0.01"},
                                           ResumeCase{"localsgd", 3, 0, "none"},
                                           // DiLoCo: global weights, outer and inner (AdamW) state;
                                           // Streaming: a fragment's outer gradient in flight at the
                                           // cut (sent after step 6, applied after 8) and residuals.
                                           ResumeCase{"diloco:inner_steps=3", 2, 0, "none", "adamw"},
                                           // A warm start cut after it, and within it.
                                           ResumeCase{"diloco:inner_steps=3,warm_start_steps=5", 2, 0, "none", "adamw"},
                                           ResumeCase{"diloco:inner_steps=3,warm_start_steps=9", 2, 0, "none"},
                                           ResumeCase{"ssgd", 2, 0, "none", "adamw"},
                                           ResumeCase{"streaming-diloco:inner_steps=4,fragments=2,overlap=2,alpha=0.5",
                                                      3, 0, "none"},
                                           ResumeCase{"streaming-diloco:inner_steps=4,fragments=2,overlap=1", 2, 0,
                                                      "twobit"},
                                           ResumeCase{"wfbp", 3, 0, "none"}, ResumeCase{"wfbp", 2, 1, "none"},
                                           ResumeCase{"compute-only", 2, 0, "none"}),
                         [](const auto& info) {
                           std::string n = info.param.algo + "_" + std::to_string(info.param.workers) + "w" +
                                           std::to_string(info.param.servers) + "s" +
                                           (info.param.codec == "none" ? "" : "_" + info.param.codec) +
                                           (info.param.optimizer == "sgd" ? "" : "_" + info.param.optimizer);
                           for (auto& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

}  // namespace
}  // namespace ferry::train
