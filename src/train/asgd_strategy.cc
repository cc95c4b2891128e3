#include "train/asgd_strategy.h"

#include "core/clock.h"
#include "core/error.h"
#include "train/checkpoint.h"
#include "train/ps_setup.h"

namespace ferry::train {

AsgdStrategy::AsgdStrategy(const StrategyContext& context) : context_(context) {
  FERRY_REQUIRE(context.options.topology == Topology::kParameterServer,
                "asgd needs --topology ps (a parameter server applies the asynchronous pushes)");
}

void AsgdStrategy::setup(FlatParams& params) {
  layout_ = make_key_layout(params.numels(), context_.options.world);
  kv_ = make_kv_worker(*context_.comm, *layout_, context_.options, shapes_of(params));
  const StrategyOptions& o = context_.options;
  if (!is_uncompressed(o.codec))
    push_codecs_ = std::make_unique<KeyPushCodecs>(o.codec, *layout_, shapes_of(params), context_.comm->rank(), o.batch);
  if (const OptimizerSplit split = split_optimizer(o.codec, o.sgd); split.on_worker)
    momentum_ = std::make_unique<WorkerMomentum>(params.size(), split);
  init_from_worker0(*kv_, *context_.comm, params);
}

void AsgdStrategy::step(FlatParams& params, std::int64_t iteration) {
  ScopedTimer wait(&comm_wait_s_);
  if (momentum_) momentum_->apply(params.grads(), params.weights());
  (push_codecs_ ? push_codecs_->push_all(*kv_, params.grads(), momentum_.get()) : kv_->push_all(params.grads())).wait();
  ++pushes_;
  kv_->pull_all(params.weights(), 0).wait();
}

void AsgdStrategy::skip_step(FlatParams& params, std::int64_t iteration) {
  ScopedTimer wait(&comm_wait_s_);
  kv_->push_skip_all().wait();  // counts as a push: the final pull's version stays right
  ++pushes_;
  kv_->pull_all(params.weights(), 0).wait();
}

void AsgdStrategy::save_state(StateWriter& out, FlatParams& params, std::int64_t iterations) {
  {
    ScopedTimer wait(&comm_wait_s_);
    kv_->checkpoint(static_cast<std::uint64_t>(iterations));
  }
  out.put("weights", params.weights());
  out.put_u64("pushes", static_cast<std::uint64_t>(pushes_));
  if (momentum_) out.put("worker_velocity", momentum_->velocity());
  if (push_codecs_) push_codecs_->save_state(out);
}

void AsgdStrategy::load_state(const StateReader& in, FlatParams& params) {
  // params already hold the server's restored weights (pulled by setup()).
  pushes_ = static_cast<std::int64_t>(in.u64("pushes"));
  if (momentum_) in.floats_into("worker_velocity", momentum_->mutable_velocity());
  if (push_codecs_) push_codecs_->load_state(in);
}

void AsgdStrategy::finish(FlatParams& params) {
  // The final model includes every worker's pushes: N·steps updates in all.
  std::uint64_t all = static_cast<std::uint64_t>(pushes_) * context_.options.world.num_workers;
  ScopedTimer wait(&comm_wait_s_);
  kv_->pull_all(params.weights(), all).wait();
  kv_->shutdown();
}

}  // namespace ferry::train
