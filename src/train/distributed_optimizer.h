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

#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"

namespace ferry::train {

class FlatParams;
class Strategy;

struct DistributedOptimizerOptions {
  std::string algo = "ssgd";          // strategy name (see strategy_names())
  std::string topology = "";          // allreduce | ps; empty = the strategy's default
  int num_servers = 0;                // parameter-server ranks (the last ranks of the world)
  float lr = 0.05f;                   // learning rate of the global optimizer
  float momentum = 0.9f;              // its momentum
  float weight_decay = 0.0f;          // its L2 coefficient
};

class DistributedOptimizer {
 public:
  // `params` are rebound into one flat buffer (their values kept); `comm` must outlive this.
  // Worker ranks start from worker 0's weights after construction.
  DistributedOptimizer(std::vector<at::Tensor> params, comm::Communicator* comm, DistributedOptimizerOptions options);
  ~DistributedOptimizer();

  // True on parameter-server ranks: call serve() there, not step().
  bool is_server() const;
  // Runs this rank's server loop until every worker has called finish().
  void serve();

  void zero_grad();
  // Synchronises the gradients of this iteration and updates the weights.
  void step();
  // Ends the run: the final global weights land in the parameters.
  void finish();
  // Seconds spent blocked on communication so far.
  double comm_wait_s() const;

 private:
  comm::Communicator* comm_;  // see constructor
  DistributedOptimizerOptions options_;
  std::vector<at::Tensor> params_;
  std::unique_ptr<FlatParams> flat_;
  std::unique_ptr<Strategy> strategy_;
  std::int64_t iteration_ = 0;
  bool finished_ = false;
};

}  // namespace ferry::train
