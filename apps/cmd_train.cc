// `ferry train`: distributed data-parallel training. Outside MPI it re-launches itself under
// mpirun with np + servers ranks (as horovodrun does); inside mpirun every rank runs its role.
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "apps/cli.h"
#include "apps/command.h"
#include "apps/link_flag.h"
#include "apps/mpi_launch.h"
#include "apps/train_flags.h"
#include "comm/link/link_options.h"
#include "comm/mpi/mpi_communicator.h"
#include "compress/codec_registry.h"
#include "core/error.h"
#include "core/metrics.h"
#include "core/plugin.h"
#include "train/train_job.h"
#include "train/models/model.h"
#include "train/run_training.h"
#include "train/strategy.h"
#include "train/train_options.h"
#include "train/training_data.h"

namespace ferry::apps {

void add_algo_shorthand_flags(CLI::App& app, std::vector<train::SpecShorthand>& shorthands) {
  struct Flag {
    const char* flag;
    const char* key;
    const char* help;
  };
  static constexpr Flag kFlags[] = {
      {"--warmup-steps", "warmup_steps", "odsgd/ssdsgd/cdsgd: S-SGD iterations before delaying (ALGO:warmup_steps=W; default 20)"},
      {"--lr-local", "lr_local", "odsgd/ssdsgd/cdsgd: local learning rate, 0: --lr (ALGO:lr_local=LR; default 0)"},
      {"--lr-warmup-steps", "lr_warmup_steps", "odsgd/ssdsgd/cdsgd: ramp the local lr over N steps (ALGO:lr_warmup_steps=N; default 0)"},
      {"--delay-steps", "delay_steps", "ssdsgd: pull the global weights every k iterations (ssdsgd:delay_steps=k; default 4)"},
      {"--local-update", "local_update", "ssdsgd: glu | sgd (ssdsgd:local_update=glu; default glu)"},
      {"--glu-coef", "glu_coef", "ssdsgd: weight of the global update direction (ssdsgd:glu_coef=c; default 0.5)"},
      {"--correction-steps", "correction_steps", "cdsgd: full-precision push every k iterations (cdsgd:correction_steps=k; default 5)"},
      {"--threshold", "threshold", "cdsgd: twobit threshold when no --codec is given (cdsgd:threshold=T; default 0.005)"},
      {"--sync-every", "sync_every", "localsgd: average the models every H iterations (localsgd:sync_every=H; default 4)"},
      {"--post-local", "post_local", "localsgd: S-SGD for the first K iterations (localsgd:post_local=K; default 0)"},
      {"--bucket-mb", "bucket_mb", "wfbp: fusion bucket size in MB (wfbp:bucket_mb=M; default 4)"},
  };
  shorthands.clear();
  shorthands.reserve(std::size(kFlags));  // the options below hold pointers into it
  for (const Flag& f : kFlags) {
    shorthands.push_back({f.flag, f.key, ""});
    app.add_option(f.flag, shorthands.back().value, f.help);
  }
}

void add_train_flags(CLI::App& app, train::TrainOptions& o, std::string& link_spec,
                     std::vector<train::SpecShorthand>& shorthands) {
  train::register_builtin_strategies();
  app.add_option("--algo", o.algo,
                 "training algorithm, a spec NAME[:KEY=VALUE,...] (e.g. diloco:inner_steps=50; docs/algorithms.md); "
                 "NAME: " + choices(train::strategy_names()))
      ->capture_default_str();
  app.add_option("--topology", o.topology, "allreduce | ps (default: the algorithm's own)");
  app.add_option("--np", o.num_workers, "worker ranks")->capture_default_str();
  app.add_option("--servers", o.num_servers, "parameter-server ranks (ps topology)")->capture_default_str();
  app.add_option("--model", o.model, choices(train::model_names()))->capture_default_str();
  app.add_option("--epochs", o.epochs, "passes over the training set")->capture_default_str();
  app.add_option("--max-steps", o.max_steps, "stop after this many iterations (0: all epochs)");
  app.add_option("--batch", o.batch, "per-worker batch size")->capture_default_str();
  app.add_option("--lr", o.lr, "learning rate")->capture_default_str();
  app.add_option("--momentum", o.momentum, "SGD momentum")->capture_default_str();
  app.add_option("--wd", o.weight_decay, "weight decay")->capture_default_str();
  add_link_flag(app, link_spec);
  app.add_option("--codec", o.codec,
                 "gradient codec spec NAME[:KEY=VALUE,...], e.g. topk:ratio=0.01 (docs/compression.md); NAME: " +
                     choices(compress::codec_names()))
      ->capture_default_str();
  app.add_option("--compress-pull", o.pull_codec,
                 "parameter server: compress pull replies too, with SPEC (default: the --codec); pulls are fp32 "
                 "otherwise, as in MXNet")
      ->expected(0, 1);
  app.add_option("--seed", o.seed, "model init and data order")->capture_default_str();
  app.add_option("--data", o.data_dir,
                 "image models: fashion-mnist (default), synthetic, or a folder of MNIST-format IDX or CIFAR-10 binary "
                 "files; gpt: python-stdlib (default) or a text file or folder");
  app.add_option("--train-limit", o.train_limit, "use only the first N training items");
  app.add_option("--test-limit", o.test_limit, "evaluate on the first N test items");
  app.add_flag("--eval-each-epoch", o.eval_each_epoch, "record test accuracy after every epoch");
  app.add_option("--eval-every", o.eval_every,
                 "also record test accuracy every N iterations (finer time to target; 0: off)");
  app.add_option("--threads", o.threads_per_rank, "libtorch threads per rank (0: cores / ranks)");
  app.add_flag("--oversubscribe", o.oversubscribe,
               "allow more than 8 ranks per core (--np + --servers) or more than 4 threads per core (--threads)");
  app.add_option("--out", o.out_dir, "directory for summary.json and metrics.jsonl");
  add_algo_shorthand_flags(app, shorthands);
}

int run_train(int argc, char** argv) {
  CLI::App app{"Distributed data-parallel training over MPI", "ferry train"};
  init_app(app);
  train::TrainOptions o;
  o.num_workers = 4;
  std::string link_spec = "none";
  bool no_progress = false;
  std::vector<train::SpecShorthand> shorthands;
  add_train_flags(app, o, link_spec, shorthands);
  app.add_flag("--no-progress", no_progress, "no progress bar");
  // Reliability (docs/reliability.md).
  std::string inject_nan;
  app.add_option("--checkpoint-every", o.checkpoint_every,
                 "write a checkpoint every N iterations and at the end (0: never)");
  app.add_option("--checkpoint-dir", o.checkpoint_dir, "directory of the checkpoints (default: <out>/checkpoints)");
  app.add_option("--keep-checkpoints", o.keep_checkpoints, "newest checkpoints kept")->capture_default_str();
  app.add_option("--resume", o.resume, "continue from this checkpoint, or from the newest one in this directory");
  app.add_flag("--deterministic", o.deterministic,
               "bit-reproducible synchronous runs: one thread per rank, fixed reduction order");
  app.add_option("--stall-timeout", o.stall_timeout_s,
                 "abort the job when a worker makes no progress for S seconds (0: never)")
      ->capture_default_str();
  app.add_option("--max-bad-steps", o.max_bad_steps, "abort after this many non-finite gradients in a row")
      ->capture_default_str();
  app.add_option("--inject-nan-at", inject_nan, "testing aid: worker 0's loss and gradient are NaN at STEP[,COUNT] iterations");
  std::vector<std::string> plugins;
  app.add_option("--plugin", plugins,
                 "shared library adding strategies or codecs to this run, on every rank (docs/architecture.md, "
                 "Plugins); repeatable");
  parse_command_line(app, argc, argv);
  for (const auto& p : plugins) load_plugin(p);  // before the --algo spec is read
  if (!inject_nan.empty()) train::parse_inject_nan(inject_nan, o);
  o.link = comm::parse_link_spec(link_spec);
  o.progress = !no_progress;
  train::register_builtin_strategies();
  // The strategy's keys resolved, its shorthand flags folded in; an unknown one refused.
  o.algo = train::fold_shorthands(o.algo, shorthands);
  if (app.count("--codec") == 0) o.codec = train::default_codec(o.algo);
  if (app.count("--compress-pull") > 0 && o.pull_codec.empty()) o.pull_codec = o.codec;
  train::validate(o);
  const train::WorldLayout layout = train::world_layout(o);
  const int ranks = layout.num_workers + layout.num_servers;

  // How the ranks wait for MPI (docs/training.md): a bad FERRY_MPI_WAIT is refused before any starts.
  const comm::MpiWait mpi_wait = comm::mpi_wait_from_environment();
  if (!comm::launched_by_mpirun()) {
    // Bad data is reported here, once, before any rank starts.
    train::check_training_data(train::load_training_data(o, train::Split::kTrain),
                               train::load_training_data(o, train::Split::kTest), o);
    // The output directory too: a rank that cannot write it would fail after the run.
    if (!o.out_dir.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(o.out_dir, ec);
      if (ec || access(o.out_dir.c_str(), W_OK) != 0)
        FERRY_THROW(IoError, "cannot write --out '", o.out_dir, "': ", ec ? ec.message() : std::strerror(errno));
    }
    train::make_train_job(o);  // the checkpoint --resume names, checked to fit this run
    // Rank status files (mpi_launch.h) tell which rank failed if mpirun stops the job.
    std::string rank_dir;
    bool own_rank_dir = false;
    if (const char* d = std::getenv(kRankDirEnv); d && *d) {
      rank_dir = d;
    } else {
      char tmpl[] = "/tmp/ferry-ranks-XXXXXX";
      if (mkdtemp(tmpl)) {
        rank_dir = tmpl;
        own_rank_dir = true;
        setenv(kRankDirEnv, tmpl, 1);
      }
    }
    std::vector<std::string> env;
    if (!rank_dir.empty()) env.push_back(kRankDirEnv);
    const ChildResult job = relaunch_under_mpirun(ranks, argc, argv, env);
    int rc = job.exit_code;
    if (job.signal != 0) {
      std::fprintf(stderr, "ferry train: stopped by signal %d (%s); mpirun and its %d ranks were ended\n", job.signal,
                   strsignal(job.signal), ranks);
      rc = signalled_exit_code(job.signal);
    } else if (rc != 0 && !rank_dir.empty()) {
      const std::string failure = describe_rank_failure(rank_dir, ranks, layout.num_workers);
      if (!failure.empty()) std::fprintf(stderr, "ferry train: error: %s\n", failure.c_str());
    }
    if (own_rank_dir) {
      std::error_code ec;
      std::filesystem::remove_all(rank_dir, ec);
    }
    return rc;
  }

  comm::MpiRuntime mpi(&argc, &argv);
  comm::MpiCommunicator world(mpi_wait);
  rank_status_start(world.rank());
  if (world.size() != ranks)
    FERRY_THROW(InvalidArgument, "mpirun started ", world.size(), " ranks but --np ", o.num_workers, " and --servers ",
                o.num_servers, " need ", ranks);
  if (world.rank() == 0 && !mpi.thread_multiple())
    std::fprintf(stderr, "ferry train: warning: MPI granted only %s\n", mpi.thread_level().c_str());
  nlohmann::json summary;
  try {
    const int rank = world.rank();
    summary = train::run_training(o, world, [rank](const std::string& why) {
      std::fprintf(stderr, "ferry train: error on rank %d: %s\n", rank, why.c_str());
      rank_status_error(rank, why);
      comm::mpi_abort(1);
    });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ferry train: error on rank %d: %s\n", world.rank(), e.what());
    rank_status_error(world.rank(), e.what());
    comm::mpi_abort(dynamic_cast<const InvalidArgument*>(&e) || dynamic_cast<const IoError*>(&e) ||
                            dynamic_cast<const FormatError*>(&e)
                        ? 2
                        : 1);
  }
  if (world.rank() == 0) {
    summary["mpi_thread_level"] = mpi.thread_level();
    if (!o.out_dir.empty()) write_json_file(o.out_dir + "/summary.json", summary);
    std::printf("%s/%s  model %s  np %d servers %d  link %s  (%s)\n", summary["algo"].get<std::string>().c_str(),
                summary["topology"].get<std::string>().c_str(), o.model.c_str(), o.num_workers,
                summary["servers"].get<int>(), summary["link"].get<std::string>().c_str(), mpi.thread_level().c_str());
    char quality[64];
    if (train::model_input(o.model) == train::ModelInput::kTokens)
      std::snprintf(quality, sizeof quality, "test perplexity %.3f", summary["test_perplexity"].get<double>());
    else
      std::snprintf(quality, sizeof quality, "test accuracy %.2f %%", 100 * summary["test_acc"].get<double>());
    std::printf("  %s   %.0f samples/s   %.1f s   comm wait %.0f %%   %.2f MB sent/worker\n", quality,
                summary["samples_per_s"].get<double>(),
                summary["wall_s"].get<double>(), 100 * summary["comm_wait_fraction"].get<double>(),
                summary["bytes_sent_per_worker"].get<double>() / 1e6);
    if (!o.out_dir.empty()) std::printf("  wrote %s/summary.json and metrics.jsonl\n", o.out_dir.c_str());
  }
  rank_status_exit(world.rank());
  return 0;
}

}  // namespace ferry::apps
