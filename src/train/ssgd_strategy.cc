#include "train/ssgd_strategy.h"

#include <cstring>

#include "core/clock.h"
#include "core/error.h"
#include "train/ps_setup.h"

namespace ferry::train {

SsgdStrategy::SsgdStrategy(const StrategyContext& context) : context_(context) {}

void SsgdStrategy::setup(FlatParams& params) {
  auto& comm = *context_.comm;
  if (context_.options.topology == Topology::kAllreduce) {
    ps::SgdOptions sgd = context_.options.sgd;
    sgd.rescale = 1.0f / context_.options.world.num_workers;
    optimizer_ = std::make_unique<ps::SgdOptimizer>(params.size(), sgd);
    comm.broadcast(std::as_writable_bytes(params.weights()), 0);
    return;
  }
  layout_ = make_key_layout(params.numels(), context_.options.world);
  kv_ = std::make_unique<ps::KVWorker>(&comm, layout_.get(), context_.options.world.first_server_rank());
  init_from_worker0(*kv_, comm, params);
}

void SsgdStrategy::step(FlatParams& params, std::int64_t iteration) {
  ScopedTimer wait(&comm_wait_s_);
  if (optimizer_) {
    context_.comm->allreduce_sum(params.grads());
    optimizer_->step(params.weights(), params.grads());
  } else {
    kv_->push_all(params.grads()).wait();
    kv_->pull_all(params.weights(), static_cast<std::uint64_t>(iteration) + 1).wait();
  }
  ++steps_;
}

void SsgdStrategy::finish(FlatParams& params) {
  if (kv_) kv_->shutdown();
}

}  // namespace ferry::train
