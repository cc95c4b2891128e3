// Horovod-style entry point for a user's own libtorch loop: wrap the model's parameters, call
// zero_grad() / backward() / step() as with torch::optim, and the chosen strategy keeps every
// worker in step. Parameter-server ranks call serve() instead of training.
//
//   ferry::comm::MpiRuntime mpi(&argc, &argv);
//   ferry::comm::MpiCommunicator comm;
//   ferry::train::DistributedOptimizer opt(model->parameters(), &comm, {.train = {.algo = "ssgd", .lr = 0.05f}});
//   for (auto& batch : my_data) { opt.zero_grad(); loss(model, batch).backward(); opt.step(); }
//   opt.finish();
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "train/train_options.h"

namespace ferry::train {

class CheckpointCoordinator;
class FlatParams;
class Strategy;
class WorkerContext;

struct DistributedOptimizerOptions {
  // `ferry train`'s options (train_options.h; the Python keywords are those the option table marks,
  // train_option_fields.h). Those of the job count: algo, topology, num_servers (the last ranks of
  // the world; the others are the workers), lr, momentum, weight_decay, codec ("": the
  // algorithm's), pull_codec, link, batch (for codec thresholds in MXNet's units), deterministic
  // (collectives in a fixed order), and the checkpoints of ferry's own state (checkpoint.h's format, as `ferry train
  // --checkpoint-every` writes them): save_checkpoint() writes checkpoint_dir/ckpt-<iterations>
  // (refused without a checkpoint_dir), `resume` (a checkpoint, or a directory whose newest
  // complete one is taken) restores every worker's and server's state, keep_checkpoints.
  TrainOptions train = {};
  // The caller steps the weights with its own optimizer before step() (DiLoCo's inner
  // optimizer); refused for strategies whose update is ferry's (StrategyInfo::external_optimizer).
  bool external_optimizer = false;
};

// Checks `options` for a world of `world_size` ranks as `ferry train` checks its flags; throws
// InvalidArgument naming the option (--servers, --algo ssdsgd: delay_steps).
void validate(const DistributedOptimizerOptions& options, int world_size);

class DistributedOptimizer {
 public:
  // `params` are rebound into one flat buffer (their values kept); `comm` must outlive this.
  // Worker ranks start from worker 0's weights after construction.
  DistributedOptimizer(std::vector<at::Tensor> params, comm::Communicator* comm, DistributedOptimizerOptions options,
                       bool announce_to_servers = false);
  ~DistributedOptimizer();

  // True on parameter-server ranks: call serve() there, not step().
  bool is_server() const;
  // Runs this rank's server loop until every worker has called finish().
  void serve();

  // For front-ends whose server ranks do not build the model (the Python package): on a ps
  // topology, worker 0's constructor also sends every server the job (world, optimizer, codecs,
  // link, tensor shapes). A server rank calls serve_announced_job(), which receives it and serves
  // it until the workers finish; it returns false at once when the workers announce that no
  // job comes (announce_no_job(), called by worker 0 when it ends without one).
  static bool serve_announced_job(comm::Communicator* comm, int num_servers);
  static void announce_no_job(comm::Communicator* comm, int num_servers);

  void zero_grad();
  // Synchronises the gradients of this iteration and updates the weights.
  void step();
  // Ends the run: the final global weights land in the parameters.
  void finish();
  // Writes ferry's state (weights, velocities, codec residuals, delay buffers, the servers'
  // shards) as the checkpoint of iterations() steps; a collective: every worker calls it after
  // the same step. Returns the checkpoint's directory.
  std::string save_checkpoint();
  // The options the job runs with, resolved (TrainJob::options: canonical specs, the topology named).
  const TrainOptions& options() const;
  // Steps done, counting those of the checkpoint resumed from.
  std::int64_t iterations() const { return iteration_; }
  // wfbp: the per-layer gate (Strategy::layer_gate) for a caller that calls it before each
  // layer's forward with the range of parameters the layer reads, so that the back layers'
  // communication overlaps the next forward (Model::enter_layer does this in `ferry train`);
  // step() then leaves each update to the gate. Empty for algorithms without one, whose step()
  // completes every update itself, as it does for wfbp when nobody took the gate.
  std::function<void(std::size_t first, std::size_t count)> take_layer_gate();
  // Seconds spent blocked on communication so far.
  double comm_wait_s() const;
  // Bytes this rank has sent so far (through the emulated link when there is one, else raw).
  std::uint64_t bytes_sent() const;
  // The codec spec in use, every option resolved ("none" when uncompressed).
  const std::string& codec() const { return options().codec; }
  // The algorithm's spec the strategy runs, every option resolved ("localsgd:sync_every=4,...").
  const std::string& algo() const { return options().algo; }

 private:
  DistributedOptimizerOptions options_;
  std::unique_ptr<WorkerContext> context_;  // the job's communicator, strategy, checkpoints
  std::vector<at::Tensor> params_;
  std::unique_ptr<FlatParams> flat_;
  std::unique_ptr<Strategy> strategy_;
  std::int64_t iteration_ = 0;
  bool finished_ = false;
  std::function<void(std::size_t, std::size_t)> layer_gate_;  // the strategy's, if it has one
  bool caller_gates_ = false;                                 // take_layer_gate() was called
  std::unique_ptr<CheckpointCoordinator> checkpoints_;
};

}  // namespace ferry::train
