#include "train/asgd_strategy.h"

#include "core/clock.h"
#include "core/error.h"
#include "train/ps_setup.h"

namespace ferry::train {

AsgdStrategy::AsgdStrategy(const StrategyContext& context) : context_(context) {
  FERRY_REQUIRE(context.options.topology == Topology::kParameterServer,
                "asgd needs --topology ps (a parameter server applies the asynchronous pushes)");
}

void AsgdStrategy::setup(FlatParams& params) {
  layout_ = make_key_layout(params.numels(), context_.options.world);
  kv_ = std::make_unique<ps::KVWorker>(context_.comm, layout_.get(), context_.options.world.first_server_rank());
  if (!is_uncompressed(context_.options.codec))
    push_codecs_ =
        std::make_unique<KeyPushCodecs>(context_.options.codec, *layout_, shapes_of(params), context_.comm->rank());
  init_from_worker0(*kv_, *context_.comm, params);
}

void AsgdStrategy::step(FlatParams& params, std::int64_t iteration) {
  ScopedTimer wait(&comm_wait_s_);
  (push_codecs_ ? push_codecs_->push_all(*kv_, params.grads()) : kv_->push_all(params.grads())).wait();
  ++pushes_;
  kv_->pull_all(params.weights(), 0).wait();
}

void AsgdStrategy::finish(FlatParams& params) {
  // The final model includes every worker's pushes: N·steps updates in all.
  std::uint64_t all = static_cast<std::uint64_t>(pushes_) * context_.options.world.num_workers;
  ScopedTimer wait(&comm_wait_s_);
  kv_->pull_all(params.weights(), all).wait();
  kv_->shutdown();
}

}  // namespace ferry::train
