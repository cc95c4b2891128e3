#include "train/distributed_optimizer.h"

#include "core/error.h"
#include "train/flat_params.h"
#include "train/ps_setup.h"
#include "train/strategy.h"

namespace ferry::train {
namespace {

StrategyOptions strategy_options(const DistributedOptimizerOptions& o, const comm::Communicator& comm) {
  register_builtin_strategies();
  const StrategyInfo& info = strategy_info(o.algo);
  Topology topology = resolve_topology(info, o.topology);
  int servers = topology == Topology::kParameterServer ? o.num_servers : 0;
  FERRY_REQUIRE(topology == Topology::kAllreduce || servers >= 1, "the ps topology needs num_servers >= 1");
  FERRY_REQUIRE(servers < comm.size(), "num_servers ", servers, " leaves no worker in a world of ", comm.size());
  return StrategyOptions{topology, WorldLayout{comm.size() - servers, servers},
                         ps::SgdOptions{o.lr, o.momentum, o.weight_decay, 1.0f}};
}

std::vector<std::size_t> numels_of(const std::vector<at::Tensor>& params) {
  std::vector<std::size_t> n;
  for (const auto& p : params) n.push_back(static_cast<std::size_t>(p.numel()));
  return n;
}

}  // namespace

DistributedOptimizer::DistributedOptimizer(std::vector<at::Tensor> params, comm::Communicator* comm,
                                           DistributedOptimizerOptions options)
    : comm_(comm), options_(std::move(options)), params_(std::move(params)) {
  StrategyOptions so = strategy_options(options_, *comm_);
  if (so.world.is_server(comm_->rank())) return;
  flat_ = std::make_unique<FlatParams>(params_);
  strategy_ = strategy_info(options_.algo).make(StrategyContext{comm_, so});
  strategy_->setup(*flat_);
}

DistributedOptimizer::~DistributedOptimizer() = default;

bool DistributedOptimizer::is_server() const { return !strategy_; }

void DistributedOptimizer::serve() {
  FERRY_REQUIRE(is_server(), "serve() is for parameter-server ranks");
  StrategyOptions so = strategy_options(options_, *comm_);
  run_parameter_server(*comm_, so.world, numels_of(params_), strategy_info(options_.algo).server_mode, so.sgd);
}

void DistributedOptimizer::zero_grad() {
  FERRY_REQUIRE(!is_server(), "zero_grad() on a parameter-server rank");
  flat_->zero_grads();
}

void DistributedOptimizer::step() {
  FERRY_REQUIRE(!is_server(), "step() on a parameter-server rank; call serve() there");
  FERRY_REQUIRE(!finished_, "step() after finish()");
  flat_->gather_grads();
  strategy_->step(*flat_, iteration_++);
}

void DistributedOptimizer::finish() {
  if (is_server() || finished_) return;
  strategy_->finish(*flat_);
  finished_ = true;
}

double DistributedOptimizer::comm_wait_s() const { return strategy_ ? strategy_->comm_wait_s() : 0.0; }

}  // namespace ferry::train
