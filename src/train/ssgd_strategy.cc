#include "train/ssgd_strategy.h"

#include <cstring>

#include "core/clock.h"
#include "core/error.h"
#include "core/finite.h"
#include "train/checkpoint.h"
#include "train/ps_setup.h"

namespace ferry::train {

SsgdStrategy::SsgdStrategy(const StrategyContext& context) : context_(context) {}

void SsgdStrategy::setup(FlatParams& params) {
  auto& comm = *context_.comm;
  const StrategyOptions& o = context_.options;
  // AdamW keeps its moments and decoupled decay on the aggregate: nothing moves to the workers.
  OptimizerSplit split;
  split.aggregate = o.sgd;
  if (OptimizerChoice::of_spec(o.optimizer).kind == OptimizerKind::kSgd) split = split_optimizer(o.codec, o.sgd);
  if (split.on_worker) momentum_ = std::make_unique<WorkerMomentum>(params.size(), split);
  if (o.topology == Topology::kAllreduce) {
    ps::SgdOptions sgd = split.aggregate;
    sgd.rescale = 1.0f / o.world.num_workers;
    optimizer_ = std::make_unique<WorkerOptimizer>(params.size(), o.optimizer, sgd, o.lr_schedule);
    if (!is_uncompressed(o.codec))
      allreduce_codecs_ = std::make_unique<TensorAllreduceCodecs>(o.codec, params, comm.rank(), o.batch);
    comm.broadcast(std::as_writable_bytes(params.weights()), 0);
    return;
  }
  layout_ = make_key_layout(params.numels(), o.world);
  kv_ = make_kv_worker(comm, *layout_, o, shapes_of(params));
  if (!is_uncompressed(o.codec))
    push_codecs_ = std::make_unique<KeyPushCodecs>(o.codec, *layout_, shapes_of(params), comm.rank(), o.batch);
  init_from_worker0(*kv_, comm, params);
}

void SsgdStrategy::step(FlatParams& params, std::int64_t iteration) { exchange(params, iteration, true); }

void SsgdStrategy::skip_step(FlatParams& params, std::int64_t iteration) { exchange(params, iteration, false); }

void SsgdStrategy::exchange(FlatParams& params, std::int64_t iteration, bool finite) {
  ScopedTimer wait(&comm_wait_s_);
  if (optimizer_) {
    bool apply = true;
    if (allreduce_codecs_) {
      // A non-finite gradient must not reach a codec (it would poison its residual): the
      // workers first agree, with a one-byte allgather, whether anybody's gradient is bad.
      const std::byte mine{finite ? std::uint8_t{0} : std::uint8_t{1}};
      for (const auto& flag : context_.comm->allgather(std::span(&mine, 1)))
        if (flag.size() != 1 || flag[0] != std::byte{0}) apply = false;
      if (apply) {
        if (momentum_) momentum_->apply(params.grads(), params.weights());
        allreduce_codecs_->allreduce_sum(*context_.comm, params.grads(), momentum_.get());
      }
    } else {
      // NaN and Inf survive the sum, so every worker sees whether anybody's gradient was bad.
      context_.comm->allreduce_sum(params.grads());
      apply = all_finite(params.grads());
    }
    if (apply) optimizer_->step(params.weights(), params.grads(), iteration);
  } else {
    if (!finite)
      kv_->push_skip_all().wait();
    else {
      if (momentum_) momentum_->apply(params.grads(), params.weights());
      (push_codecs_ ? push_codecs_->push_all(*kv_, params.grads(), momentum_.get()) : kv_->push_all(params.grads()))
          .wait();
    }
    kv_->pull_all(params.weights(), static_cast<std::uint64_t>(iteration) + 1).wait();
  }
  ++steps_;
}

void SsgdStrategy::save_state(StateWriter& out, FlatParams& params, std::int64_t iterations) {
  if (kv_) {
    ScopedTimer wait(&comm_wait_s_);
    kv_->checkpoint(static_cast<std::uint64_t>(iterations));  // the servers write the global state
  }
  out.put("weights", params.weights());
  if (optimizer_) optimizer_->save_state(out, "velocity");
  if (momentum_) out.put("worker_velocity", momentum_->velocity());
  if (allreduce_codecs_) allreduce_codecs_->save_state(out);
  if (push_codecs_) push_codecs_->save_state(out);
}

void SsgdStrategy::load_state(const StateReader& in, FlatParams& params) {
  // With a parameter server setup() pulled the restored global weights; they equal the saved ones.
  in.floats_into("weights", params.weights());
  if (optimizer_) optimizer_->load_state(in, "velocity");
  if (momentum_) in.floats_into("worker_velocity", momentum_->mutable_velocity());
  if (allreduce_codecs_) allreduce_codecs_->load_state(in);
  if (push_codecs_) push_codecs_->load_state(in);
}

void SsgdStrategy::finish(FlatParams& params) {
  if (kv_) kv_->shutdown();
}

}  // namespace ferry::train
