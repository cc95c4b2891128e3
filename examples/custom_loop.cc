// Your own libtorch training loop, made data-parallel with ferry in four lines (marked "ferry").
//
//   mpirun --allow-run-as-root --oversubscribe -np 4 build/default/examples/custom_loop
//   mpirun ... -np 5 build/default/examples/custom_loop ps      # 4 workers + 1 parameter server
#include <torch/torch.h>

#include <cstdio>
#include <cstring>

#include "comm/mpi/mpi_communicator.h"
#include "train/distributed_optimizer.h"

int main(int argc, char** argv) {
  ferry::comm::MpiRuntime mpi(&argc, &argv);  // ferry
  ferry::comm::MpiCommunicator comm;          // ferry
  const bool ps = argc > 1 && !std::strcmp(argv[1], "ps");
  torch::set_num_threads(1);
  torch::manual_seed(comm.rank());  // different inits: ferry makes all workers start from worker 0's

  // The user's model and data: a two-layer net learning y = sin(3x) on random points.
  auto model = torch::nn::Sequential(torch::nn::Linear(1, 64), torch::nn::Tanh(), torch::nn::Linear(64, 1));
  ferry::train::DistributedOptimizer opt(model->parameters(), &comm,  // ferry
                                         {.train = {.algo = "ssgd", .topology = ps ? "ps" : "allreduce",
                                                    .num_servers = ps ? 1 : 0, .lr = 0.05f, .momentum = 0.9f}});
  if (opt.is_server()) {
    opt.serve();
    return 0;
  }
  torch::Tensor loss;
  for (int step = 0; step < 300; ++step) {
    auto x = torch::rand({32, 1}) * 2 - 1;  // each worker draws its own batch
    opt.zero_grad();
    loss = torch::mse_loss(model->forward(x), torch::sin(3 * x));
    loss.backward();
    opt.step();  // ferry: averages gradients over workers and updates
    if (comm.rank() == 0 && step % 100 == 0) std::printf("step %3d  loss %.4f\n", step, loss.item<float>());
  }
  opt.finish();
  if (comm.rank() == 0)
    std::printf("final loss %.4f  (comm wait %.2f s)\n", loss.item<float>(), opt.comm_wait_s());
  return 0;
}
