#include "train/run_training.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <thread>

#include "comm/link/shaped_communicator.h"
#include "comm/ordered_communicator.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/finite.h"
#include "core/metrics.h"
#include "core/progress.h"
#include "train/checkpoint.h"
#include "train/data/data_loader.h"
#include "train/data/mnist_loader.h"
#include "train/flat_params.h"
#include "train/gradient_codecs.h"
#include "train/models/evaluate.h"
#include "train/models/model.h"
#include "train/ps_setup.h"
#include "train/stall_watchdog.h"
#include "train/strategy.h"

namespace ferry::train {
namespace {

constexpr int kTagStats = 60;
constexpr int kTagCheckpointDone = 61;  // worker -> rank 0: my state file is written

// What each worker reports to rank 0 at the end.
struct WorkerStats {
  double train_s = 0;
  double comm_wait_s = 0;
  double bytes_sent = 0;
  double steps = 0;
  double bad_steps = 0;  // iterations whose gradient was not finite (skipped)
  double bytes_recv = 0;
};

std::string hex64(std::uint64_t v) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(v));
  return text;
}

int default_threads(int ranks) {
  int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / std::max(1, ranks));
}

}  // namespace

nlohmann::json run_training(const TrainOptions& o, comm::Communicator& raw_comm,
                            const std::function<void(const std::string& why)>& on_stall) {
  validate(o);
  const StrategyInfo& info = strategy_info(o.algo);
  const Topology topology = resolve_topology(info, o.topology);
  const WorldLayout world = world_layout(o);
  FERRY_REQUIRE(raw_comm.size() == world.num_workers + world.num_servers, "the run needs ",
                world.num_workers + world.num_servers, " ranks (", world.num_workers, " workers + ", world.num_servers,
                " servers) but the communicator has ", raw_comm.size());
  // --deterministic: one intra-op thread per rank and collectives in a fixed reduction order.
  torch::set_num_threads(o.deterministic ? 1
                         : o.threads_per_rank > 0 ? o.threads_per_rank
                                                  : default_threads(raw_comm.size()));
  if (o.deterministic) at::globalContext().setDeterministicAlgorithms(true, false);

  std::unique_ptr<comm::ShapedCommunicator> shaped;
  std::unique_ptr<comm::OrderedCollectivesCommunicator> ordered;
  comm::Communicator* comm = &raw_comm;
  if (o.link.enabled()) {
    shaped = std::make_unique<comm::ShapedCommunicator>(&raw_comm, o.link);  // ring collectives already
    comm = shaped.get();
  } else if (o.deterministic) {
    ordered = std::make_unique<comm::OrderedCollectivesCommunicator>(&raw_comm);
    comm = ordered.get();
  }

  // Checkpoints: where they go, and the one this run continues from.
  const std::string ckpt_root = o.checkpoint_every > 0 ? checkpoint_root(o) : "";
  std::string resume_dir;
  std::int64_t start_it = 0;
  if (!o.resume.empty()) {
    resume_dir = find_checkpoint(o.resume);
    nlohmann::json meta = read_checkpoint_meta(resume_dir);
    check_resumable(meta, o, resume_dir);
    start_it = meta["iterations"].get<std::int64_t>();
  }
  const int rank = comm->rank();

  auto model = make_model(o.model, o.seed);
  std::vector<std::size_t> numels;
  for (const auto& p : model->parameters()) numels.push_back(static_cast<std::size_t>(p.numel()));
  const ps::SgdOptions sgd{o.lr, o.momentum, o.weight_decay, 1.0f};
  const std::string codec = canonical_codec(o);
  const std::string pull_codec = canonical_pull_codec(o);

  if (world.is_server(rank)) {
    run_parameter_server(*comm, world, numels, info.server_mode, sgd, codec, shapes_of(model->parameters()),
                         pull_codec, ServerCheckpointing{ckpt_root, resume_dir});
    return {};
  }

  // Data: every worker loads the training set and reads its own shard of each epoch.
  Dataset train_set = load_mnist(MnistOptions{o.data_dir, Split::kTrain, {}, o.train_limit});
  // The test set: rank 0 evaluates the final model; with --eval-each-epoch or --eval-every
  // every worker evaluates during training (see record_accuracy).
  const bool evaluating = o.eval_each_epoch || o.eval_every > 0;
  Dataset test_set;
  if (rank == 0 || evaluating)
    test_set = load_mnist(MnistOptions{o.data_dir, Split::kTest, {}, o.test_limit});
  DataLoader loader(train_set, DataLoaderOptions{o.batch, world.num_workers, rank, o.seed, true});

  FlatParams params(model->parameters());
  StrategyOptions strategy_options{topology, world, sgd, codec, pull_codec};
  strategy_options.delayed = o.delayed;
  auto strategy = info.make(StrategyContext{comm, strategy_options});
  StallWatchdog watchdog(o.stall_timeout_s, on_stall);
  watchdog.progress(start_it);
  strategy->setup(params);
  model->set_layer_gate(strategy->layer_gate());
  double loss_ema = NAN;
  std::int64_t bad_in_row = 0, bad_steps = 0;
  if (!resume_dir.empty()) {
    StateReader in = StateReader::read_file(worker_state_path(resume_dir, rank));
    FERRY_CHECK(static_cast<std::int64_t>(in.u64("iterations")) == start_it);
    strategy->load_state(in, params);
    loss_ema = in.f64("loss_ema");
    bad_in_row = static_cast<std::int64_t>(in.u64("bad_in_row"));
  }

  const std::int64_t steps_per_epoch = loader.steps_per_epoch();
  std::int64_t total_steps = steps_per_epoch * o.epochs;
  if (o.max_steps > 0) total_steps = std::min(total_steps, o.max_steps);

  std::unique_ptr<JsonlWriter> metrics;
  std::unique_ptr<Progress> progress;
  if (rank == 0 && !o.out_dir.empty()) metrics = std::make_unique<JsonlWriter>(o.out_dir + "/metrics.jsonl");
  if (rank == 0 && o.progress)
    progress = std::make_unique<Progress>(total_steps, ProgressOptions{"train " + o.algo, "it"});

  // Every worker writes its state, then rank 0 (once all have) makes the checkpoint visible.
  std::int64_t last_checkpoint = start_it;
  auto save_checkpoint = [&](std::int64_t done) {
    StateWriter out;
    strategy->save_state(out, params, done);
    out.put_u64("iterations", static_cast<std::uint64_t>(done));
    out.put_f64("loss_ema", loss_ema);
    out.put_u64("bad_in_row", static_cast<std::uint64_t>(bad_in_row));
    const std::string tmp = checkpoint_tmp_dir(ckpt_root, done);
    make_dirs(tmp);
    out.write_file(worker_state_path(tmp, rank));
    auto done_bytes = std::as_bytes(std::span(&done, 1));
    if (rank != 0) {
      raw_comm.send(0, kTagCheckpointDone, done_bytes);
    } else {
      for (int w = 1; w < world.num_workers; ++w) {
        comm::Message m = raw_comm.recv(w, kTagCheckpointDone);
        FERRY_CHECK(m.data.size() == sizeof done && std::memcmp(m.data.data(), &done, sizeof done) == 0);
      }
      nlohmann::json meta = {
          {"format", "ferry-checkpoint-1"},
          {"iterations", done},
          {"epoch", done / steps_per_epoch},
          {"steps_per_epoch", steps_per_epoch},
          {"world", {{"topology", topology_name(topology)}, {"workers", world.num_workers},
                     {"servers", world.num_servers}}},
          {"config", options_to_json(o)},
      };
      finalize_checkpoint(ckpt_root, done, meta, o.keep_checkpoints);
    }
    last_checkpoint = done;
  };

  double train_s = 0, eval_s = 0, checkpoint_s = 0, last_loss = NAN;
  const double start = now_s();
  // Every worker evaluates, and takes the time out of its training time: when rank 0 alone
  // evaluated, the other workers of a synchronous algorithm waited for it inside their
  // training time, which charged the evaluation to them (and not to compute-only's workers,
  // which never wait). Only rank 0's accuracy is recorded; `record` says where it was taken.
  auto record_accuracy = [&](nlohmann::json record, std::int64_t done_steps) {
    Stopwatch sw;
    strategy->complete(params);
    EvalResult r = evaluate(*model, test_set);
    eval_s += sw.elapsed_s();
    watchdog.progress(done_steps);
    record["t"] = now_s() - start - eval_s;
    record["test_acc"] = r.accuracy;
    if (metrics) metrics->write(record);
  };
  std::int64_t it = start_it;
  for (int epoch = static_cast<int>(start_it / steps_per_epoch); epoch < o.epochs && it < total_steps; ++epoch) {
    for (std::int64_t s = it - epoch * steps_per_epoch; s < steps_per_epoch && it < total_steps; ++s, ++it) {
      Batch b = loader.batch(epoch, s);
      params.zero_grads();
      auto loss = torch::nn::functional::cross_entropy(model->forward(b.images), b.labels);
      if (rank == 0 && o.inject_nan_step >= 0 && it >= o.inject_nan_step &&
          it < o.inject_nan_step + o.inject_nan_count)
        loss = loss * NAN;  // testing aid (--inject-nan-at): every gradient of this step is NaN
      loss.backward();
      params.gather_grads();
      const bool finite = all_finite(params.grads());
      if (finite) {
        bad_in_row = 0;
      } else {
        // The strategy skips the step for everybody (Strategy::skip_step).
        ++bad_in_row;
        ++bad_steps;
        if (bad_in_row >= o.max_bad_steps)
          FERRY_THROW(Error, bad_in_row, " non-finite gradients (NaN or Inf) in a row, iterations ",
                      it - bad_in_row + 1, "..", it, " (--max-bad-steps ", o.max_bad_steps,
                      "): training diverged; lower --lr or check the data");
        std::fprintf(stderr,
                     "ferry train: warning: rank %d iteration %lld: non-finite gradient (NaN or Inf), step skipped "
                     "(%lld in a row, abort at --max-bad-steps %d)\n",
                     rank, static_cast<long long>(it), static_cast<long long>(bad_in_row), o.max_bad_steps);
      }
      if (finite)
        strategy->step(params, it);
      else
        strategy->skip_step(params, it);
      watchdog.progress(it + 1);
      if (!ckpt_root.empty() && (it + 1) % o.checkpoint_every == 0 && it + 1 < total_steps) {
        Stopwatch sw;
        save_checkpoint(it + 1);
        watchdog.progress(it + 1);
        checkpoint_s += sw.elapsed_s();
        eval_s += sw.elapsed_s();  // not training time
      }
      last_loss = loss.item<double>();
      if (std::isfinite(last_loss))
        loss_ema = std::isnan(loss_ema) ? last_loss : 0.95 * loss_ema + 0.05 * last_loss;
      if (rank == 0) {
        double t = now_s() - start - eval_s;
        if (metrics)
          metrics->write({{"iter", it}, {"epoch", epoch}, {"t", t}, {"loss", last_loss},
                          {"bytes_sent", comm->counters().bytes_sent}, {"comm_wait_s", strategy->comm_wait_s()}});
        if (progress) {
          char status[64];
          std::snprintf(status, sizeof status, "loss %.3f", loss_ema);
          progress->update(it + 1, status);
        }
      }
      const bool loop_ends = s + 1 == steps_per_epoch || it + 1 == total_steps;  // --eval-each-epoch's turn
      if (o.eval_every > 0 && (it + 1) % o.eval_every == 0 && !(loop_ends && o.eval_each_epoch))
        record_accuracy({{"iter", it}, {"epoch", epoch}}, it + 1);
    }
    if (o.eval_each_epoch) record_accuracy({{"epoch_end", epoch}}, it);
  }
  if (!ckpt_root.empty() && it != last_checkpoint) {
    Stopwatch sw;
    save_checkpoint(it);  // the final one: a later run may continue (e.g. with more --epochs)
    checkpoint_s += sw.elapsed_s();
    eval_s += sw.elapsed_s();
  }
  strategy->finish(params);
  train_s = now_s() - start - eval_s;
  if (progress) progress->finish();

  WorkerStats mine{train_s, strategy->comm_wait_s(), static_cast<double>(comm->counters().bytes_sent),
                   static_cast<double>(it - start_it), static_cast<double>(bad_steps),
                   static_cast<double>(comm->counters().bytes_recv)};
  if (rank != 0) {
    raw_comm.send(0, kTagStats, std::as_bytes(std::span(&mine, 1)));
    return {};
  }
  std::vector<WorkerStats> all{mine};
  for (int w = 1; w < world.num_workers; ++w) {
    comm::Message m = raw_comm.recv(w, kTagStats);
    WorkerStats s;
    FERRY_CHECK(m.data.size() == sizeof s);
    std::memcpy(&s, m.data.data(), sizeof s);
    all.push_back(s);
  }
  double max_train = 0, wait_frac = 0, bytes = 0, bytes_recv = 0, all_bad = 0;
  for (const auto& s : all) {
    all_bad += s.bad_steps;
    max_train = std::max(max_train, s.train_s);
    wait_frac += s.comm_wait_s / std::max(s.train_s, 1e-9) / all.size();
    bytes += s.bytes_sent / all.size();
    bytes_recv += s.bytes_recv / all.size();
  }
  EvalResult final_eval = evaluate(*model, test_set);
  nlohmann::json summary = {
      {"algo", o.algo},
      {"topology", topology_name(topology)},
      {"np", o.num_workers},
      {"servers", world.num_servers},
      {"model", o.model},
      {"parameters", model->parameter_count()},
      {"epochs", o.epochs},
      {"batch", o.batch},
      {"lr", o.lr},
      {"seed", o.seed},
      {"link", comm::describe(o.link)},
      {"codec", codec},
      {"pull_codec", pull_codec.empty() ? "fp32" : pull_codec},
      {"iterations", it},
      {"samples_per_s", static_cast<double>(it - start_it) * o.batch * o.num_workers / std::max(max_train, 1e-9)},
      {"resumed_from", start_it},
      {"skipped_steps", all_bad},
      {"checkpoint_s", checkpoint_s},
      {"deterministic", o.deterministic},
      {"weights_fnv1a", hex64(fnv1a64(std::as_bytes(params.weights())))},
      {"test_acc", final_eval.accuracy},
      {"test_loss", final_eval.mean_loss},
      {"final_train_loss", loss_ema},
      {"wall_s", max_train},
      {"bytes_sent_per_worker", bytes},
      {"bytes_recv_per_worker", bytes_recv},
      {"comm_wait_fraction", wait_frac},
  };
  if (!o.out_dir.empty()) write_json_file(o.out_dir + "/summary.json", summary);
  return summary;
}

}  // namespace ferry::train
