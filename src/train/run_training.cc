#include "train/run_training.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <thread>

#include "core/error.h"
#include "core/metrics.h"
#include "core/progress.h"
#include "train/checkpoint.h"
#include "train/checkpoint_coordinator.h"
#include "train/data/data_loader.h"
#include "train/flat_params.h"
#include "train/gradient_codecs.h"
#include "train/models/evaluate.h"
#include "train/models/model.h"
#include "train/run_summary.h"
#include "train/stall_watchdog.h"
#include "train/strategy.h"
#include "train/trainer_step.h"
#include "train/training_clock.h"
#include "train/training_data.h"
#include "train/training_evaluator.h"
#include "train/worker_context.h"

namespace ferry::train {
namespace {

int default_threads(int ranks) {
  int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / std::max(1, ranks));
}

// The exponential average of the training loss shown by the progress line (non-finite losses,
// of skipped steps, leave it unchanged).
void update_loss_ema(double& ema, double loss) {
  if (std::isfinite(loss)) ema = std::isnan(ema) ? loss : 0.95 * ema + 0.05 * loss;
}

}  // namespace

nlohmann::json run_training(const TrainOptions& o, comm::Communicator& raw_comm,
                            const std::function<void(const std::string& why)>& on_stall) {
  WorkerContext context(make_train_job(o), raw_comm);
  const TrainJob& job = context.job();
  const WorldLayout world = job.world();
  FERRY_REQUIRE(raw_comm.size() == world.num_workers + world.num_servers, "the run needs ",
                world.num_workers + world.num_servers, " ranks (", world.num_workers, " workers + ", world.num_servers,
                " servers) but the communicator has ", raw_comm.size());
  // --deterministic: one intra-op thread per rank (and the context's collectives in a fixed order).
  torch::set_num_threads(o.deterministic ? 1
                         : o.threads_per_rank > 0 ? o.threads_per_rank
                                                  : default_threads(raw_comm.size()));
  if (o.deterministic) at::globalContext().setDeterministicAlgorithms(true, false);
  comm::Communicator* comm = &context.comm();
  const std::int64_t start_it = job.resume.iterations;
  const int rank = comm->rank();

  auto model = make_model(o.model, o.seed, model_options(o));
  if (context.is_server()) {
    context.serve(shapes_of(model->parameters()));
    return {};
  }

  // Data: every worker loads the training set and reads its own shard of each epoch.
  Dataset train_set = load_training_data(o, Split::kTrain);
  // The test set: rank 0 evaluates the final model; with --eval-each-epoch or --eval-every
  // every worker evaluates during training (training_evaluator.h).
  const EvalSchedule eval_schedule{o.eval_each_epoch, o.eval_every};
  Dataset test_set;
  if (rank == 0 || eval_schedule.each_epoch || eval_schedule.every > 0)
    test_set = load_training_data(o, Split::kTest);
  check_training_data(train_set, test_set, o);
  DataLoader loader(train_set, DataLoaderOptions{o.batch, world.num_workers, rank, o.seed, true});

  FlatParams params(model->parameters());
  auto strategy = context.make_strategy();
  StallWatchdog watchdog(o.stall_timeout_s, on_stall);
  watchdog.progress(start_it);
  strategy->setup(params);
  model->set_layer_gate(strategy->layer_gate());
  TrainerStep step(TrainerStepOptions{rank, o.max_bad_steps, o.inject_nan_step, o.inject_nan_count}, *model, params,
                   *strategy);
  const WorkerLoopState loop = context.resume(*strategy, params, &model->module());
  double loss_ema = loop.loss_ema;
  step.set_bad_in_row(loop.bad_in_row);

  const std::int64_t steps_per_epoch = loader.steps_per_epoch();
  std::int64_t total_steps = steps_per_epoch * o.epochs;
  if (o.max_steps > 0) total_steps = std::min(total_steps, o.max_steps);

  std::unique_ptr<JsonlWriter> metrics;
  std::unique_ptr<Progress> progress;
  if (rank == 0 && !o.out_dir.empty()) metrics = std::make_unique<JsonlWriter>(o.out_dir + "/metrics.jsonl");
  if (rank == 0 && o.progress)
    progress = std::make_unique<Progress>(total_steps, ProgressOptions{"train " + o.algo, "it"});

  const std::unique_ptr<CheckpointCoordinator> checkpoint_plan = context.checkpoints(steps_per_epoch);
  CheckpointCoordinator& checkpoints = *checkpoint_plan;

  TrainingClock clock;
  TrainingEvaluator evaluator(*model, test_set, *strategy, params, watchdog, clock, metrics.get());
  std::int64_t it = start_it;
  for (int epoch = static_cast<int>(start_it / steps_per_epoch); epoch < o.epochs && it < total_steps; ++epoch) {
    for (std::int64_t s = it - epoch * steps_per_epoch; s < steps_per_epoch && it < total_steps; ++s, ++it) {
      const double loss = step.run(loader.batch(epoch, s), it);
      watchdog.progress(it + 1);
      if (checkpoints.due(it + 1, total_steps)) {
        // The state's loss average is that of the iterations before this one (updated below).
        clock.exclude(checkpoints.save(it + 1, *strategy, params, WorkerLoopState{loss_ema, step.bad_in_row()}, &model->module()));
        watchdog.progress(it + 1);
      }
      update_loss_ema(loss_ema, loss);
      if (rank == 0) {
        if (metrics)
          metrics->write({{"iter", it}, {"epoch", epoch}, {"t", clock.training_s()}, {"loss", loss},
                          {"bytes_sent", comm->counters().bytes_sent}, {"comm_wait_s", strategy->comm_wait_s()}});
        if (progress) {
          char status[64];
          std::snprintf(status, sizeof status, "loss %.3f", loss_ema);
          progress->update(it + 1, status);
        }
      }
      const bool loop_ends = s + 1 == steps_per_epoch || it + 1 == total_steps;  // --eval-each-epoch's turn
      if (eval_every_due(eval_schedule, it, loop_ends)) evaluator.record({{"iter", it}, {"epoch", epoch}}, it + 1);
    }
    if (eval_schedule.each_epoch) evaluator.record({{"epoch_end", epoch}}, it);
  }
  if (checkpoints.final_due(it))
    clock.exclude(checkpoints.save(it, *strategy, params, WorkerLoopState{loss_ema, step.bad_in_row()}, &model->module()));
  strategy->finish(params);
  const double train_s = clock.training_s();
  if (progress) progress->finish();

  const WorkerStats mine{train_s, strategy->comm_wait_s(), static_cast<double>(comm->counters().bytes_sent),
                         static_cast<double>(it - start_it), static_cast<double>(step.bad_steps()),
                         static_cast<double>(comm->counters().bytes_recv)};
  const auto all = gather_worker_stats(raw_comm, world.num_workers, mine);
  if (!all) return {};
  RunSummaryInput in;
  in.options = &job.options;
  in.parameters = model->parameter_count();
  in.iterations = it;
  in.resumed_from = start_it;
  in.checkpoint_s = checkpoints.seconds();
  in.weights_hash = fnv1a64(std::as_bytes(params.weights()));
  in.final_eval = evaluate(*model, test_set);
  in.final_train_loss = loss_ema;
  nlohmann::json summary = make_run_summary(in, *all);
  if (!o.out_dir.empty()) write_json_file(o.out_dir + "/summary.json", summary);
  return summary;
}

}  // namespace ferry::train
