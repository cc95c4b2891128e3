// `ferry train`: distributed data-parallel training. Outside MPI it re-launches itself under
// mpirun with np + servers ranks (as horovodrun does); inside mpirun every rank runs its role.
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "apps/cli.h"
#include "apps/command.h"
#include "apps/mpi_launch.h"
#include "apps/train_flags.h"
#include "comm/mpi/mpi_communicator.h"
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

int run_train(int argc, char** argv) {
  CLI::App app{"Distributed data-parallel training over MPI", "ferry train"};
  init_app(app);
  train::TrainOptions o;
  TrainFlags flags(app, o, train::OptionPlace::kFlag);
  std::vector<std::string> plugins;
  app.add_option("--plugin", plugins,
                 "shared library adding strategies or codecs to this run, on every rank (docs/architecture.md, "
                 "Plugins); repeatable");
  parse_command_line(app, argc, argv);
  for (const auto& p : plugins) load_plugin(p);  // before the --algo spec is read
  // The strategy's keys resolved, its shorthand flags folded in; an unknown one refused.
  flags.apply();
  // --compress-pull alone: the pulls take the pushes' codec.
  if (app.count("--compress-pull") > 0 && o.pull_codec.empty()) o.pull_codec = train::codec_or_default(o);
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
