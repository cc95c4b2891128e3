// Horovod-style entry point for a user's own libtorch loop: wrap the model's parameters, call
// zero_grad() / backward() / step() as with torch::optim, and the chosen strategy keeps every
// worker in step. Parameter-server ranks call serve() instead of training.
//
//   ferry::comm::MpiRuntime mpi(&argc, &argv);
//   ferry::comm::MpiCommunicator comm;
//   ferry::train::DistributedOptimizer opt(model->parameters(), &comm, {.algo = "ssgd", .lr = 0.05f});
//   for (auto& batch : my_data) { opt.zero_grad(); loss(model, batch).backward(); opt.step(); }
//   opt.finish();
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"

namespace ferry::train {

class CheckpointCoordinator;
class FlatParams;
class Strategy;
class WorkerContext;

// The options of `ferry train` that concern the optimizer (same names, same checks: validate()).
struct DistributedOptimizerOptions {
  std::string algo = "ssgd";          // --algo spec: a strategy name (strategy_names()) and its keys
  std::string topology = "";          // allreduce | ps; empty = the strategy's default
  int num_servers = 0;                // parameter-server ranks (the last ranks of the world)
  float lr = 0.05f;                   // learning rate of the global optimizer
  float momentum = 0.9f;              // its momentum
  float weight_decay = 0.0f;          // its L2 coefficient
  std::string codec = "";             // gradient codec spec; empty = the algorithm's default
  std::string pull_codec = "";        // ps: codec of the pull replies; empty = fp32 pulls
  std::string link = "none";          // emulated NIC of every rank: BANDWIDTH[,LATENCY] or none
  // The caller steps the weights with its own optimizer before step() (DiLoCo's inner
  // optimizer); refused for strategies whose update is ferry's (StrategyInfo::external_optimizer).
  bool external_optimizer = false;
  std::int64_t batch = 0;             // per-worker batch, for codec thresholds in MXNet's units
                                      // (twobit units=mxnet); 0 = not given
  // Checkpoints of ferry's own state (checkpoint.h's format, as `ferry train --checkpoint-every`
  // writes them): save_checkpoint() writes ROOT/ckpt-<iterations>; `resume` (a checkpoint, or a
  // root whose newest complete one is taken) restores every worker's and server's state.
  std::string checkpoint_dir = "";    // ROOT; "" = save_checkpoint() is refused
  std::string resume = "";            // "" = a fresh start
  int keep_checkpoints = 2;           // the newest ones kept in ROOT
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
  const std::string& codec() const;
  // The algorithm's spec the strategy runs, every option resolved ("localsgd:sync_every=4,...").
  const std::string& algo() const;

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
