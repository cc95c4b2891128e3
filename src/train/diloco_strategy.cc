#include "train/diloco_strategy.h"

#include <algorithm>
#include <cmath>

#include "core/clock.h"
#include "core/error.h"
#include "train/checkpoint.h"

namespace ferry::train {

StrategyInfo diloco_entry(bool streaming) {
  StrategyInfo info;
  info.name = streaming ? "streaming-diloco" : "diloco";
  info.summary = streaming
                     ? "Streaming DiLoCo: fragments synchronised at staggered steps, sends overlapped with inner steps"
                     : "DiLoCo: H inner steps per worker, outer Nesterov step on the averaged weight change";
  info.topologies = {Topology::kAllreduce};
  info.external_optimizer = true;
  info.worker_optimizer = {Topology::kAllreduce};
  info.default_optimizer = "adamw";  // the paper's inner optimizer
  info.read_options = [streaming](SpecReader& r) { DilocoOptions::read(r, streaming); };
  info.make = [streaming](const StrategyContext& c) -> std::unique_ptr<Strategy> {
    return std::make_unique<DilocoStrategy>(c, streaming);
  };
  return info;
}

DilocoStrategy::DilocoStrategy(const StrategyContext& context, bool streaming)
    : context_(context), streaming_(streaming) {
  FERRY_REQUIRE(context.options.topology == Topology::kAllreduce, "--algo ", name(),
                " needs --topology allreduce (it averages the outer gradients with an allreduce)");
  options_ = DilocoOptions::of_spec(strategy_spec(context.options, name()));
  FERRY_REQUIRE(!context.options.external_optimizer || options_.warm_start_steps == 0, "--algo ", name(),
                ": warm_start_steps needs ferry's own inner optimizer (its S-SGD steps the optimizer on the mean "
                "gradient); an external one steps before ferry sees the gradients");
  FERRY_REQUIRE(!context.options.external_optimizer || options_.inner_lr_scale == 1, "--algo ", name(),
                ": inner_lr_scale scales ferry's own inner optimizer; an external one keeps its own learning rate "
                "(set it there)");
}

DilocoStrategy::~DilocoStrategy() { comm_thread_.stop(); }

void DilocoStrategy::setup(FlatParams& params) {
  const StrategyOptions& so = context_.options;
  const std::size_t n = params.size();
  if (!so.external_optimizer) {
    ps::SgdOptions sgd = so.sgd;
    sgd.rescale = 1.0f;  // its own gradient; the warm start's S-SGD divides the sum by N itself
    inner_ = std::make_unique<WorkerOptimizer>(n, so.optimizer, sgd, so.lr_schedule);
  }
  if (!is_uncompressed(so.codec))
    codecs_ = std::make_unique<TensorAllreduceCodecs>(so.codec, params, context_.comm->rank(), so.batch);
  context_.comm->broadcast(std::as_writable_bytes(params.weights()), 0);
  global_.assign(params.weights().begin(), params.weights().end());
  if (options_.outer_momentum > 0) velocity_.assign(n, 0.0f);
  delta_.assign(n, 0.0f);

  const std::vector<std::size_t> cuts = fragment_cuts(params.numels(), options_.fragments, name());
  const std::size_t tensors = params.num_params(), p_count = cuts.size() - 1;
  fragments_.resize(p_count);
  for (std::size_t p = 0; p < p_count; ++p) {
    Fragment& f = fragments_[p];
    f.first_tensor = cuts[p];
    f.end_tensor = cuts[p + 1];
    f.begin = params.offset(f.first_tensor);
    f.end = f.end_tensor < tensors ? params.offset(f.end_tensor) : n;
    f.offset = static_cast<std::int64_t>(p) * options_.inner_steps / options_.fragments;
  }
  if (options_.overlap > 0) comm_thread_.start();
}

void DilocoStrategy::step(FlatParams& params, std::int64_t iteration) {
  if (iteration < options_.warm_start_steps) return warm_step(params, iteration);
  inner_step(params, iteration, true);
  after_step(params);
}

// A worker's non-finite gradient drops its inner step alone; the synchronisations go on. In the
// warm start the sum carries it to every worker, which all skip the step, as S-SGD does.
void DilocoStrategy::skip_step(FlatParams& params, std::int64_t iteration) {
  if (iteration < options_.warm_start_steps) return warm_step(params, iteration);
  inner_step(params, iteration, false);
  after_step(params);
}

void DilocoStrategy::warm_step(FlatParams& params, std::int64_t iteration) {
  allreduce_mean_step(*context_.comm, params, *inner_, iteration, comm_wait_s_);
  if (iteration + 1 == options_.warm_start_steps)  // θ of the first outer step
    std::copy(params.weights().begin(), params.weights().end(), global_.begin());
}

void DilocoStrategy::inner_step(FlatParams& params, std::int64_t iteration, bool finite) {
  if (finite && inner_) inner_->step(params.weights(), params.grads(), iteration, static_cast<float>(options_.inner_lr_scale));
  // external optimizer: the caller has stepped the weights
}

void DilocoStrategy::after_step(FlatParams& params) {
  const std::int64_t s = ++steps_;
  const std::int64_t h = options_.inner_steps;
  for (Fragment& f : fragments_) {
    if (f.pending && s == f.sent_at + options_.overlap) {
      {
        ScopedTimer wait(&comm_wait_s_);
        f.ticket.wait();
      }
      f.ticket = comm::Ticket();
      f.pending = false;
      apply(params, f, options_.alpha);
    }
    if (s >= h && s % h == f.offset) send(params, f);
  }
}

void DilocoStrategy::send(FlatParams& params, Fragment& f) {
  take_delta(params, f);
  if (options_.overlap > 0) {
    f.pending = true;
    f.sent_at = steps_;
    f.ticket = comm_thread_.submit([this, &f] { exchange(f); });
    return;
  }
  exchange_and_apply(params, f, options_.alpha);
}

void DilocoStrategy::take_delta(FlatParams& params, Fragment& f) {
  auto w = params.weights();
  for (std::size_t i = f.begin; i < f.end; ++i) delta_[i] = global_[i] - w[i];
  f.last_sync = steps_;
}

void DilocoStrategy::exchange_and_apply(FlatParams& params, Fragment& f, double alpha) {
  {
    ScopedTimer wait(&comm_wait_s_);
    exchange(f);
  }
  apply(params, f, alpha);
}

void DilocoStrategy::exchange(Fragment& f) {
  std::span<float> d(delta_);
  if (codecs_)
    codecs_->allreduce_sum(*context_.comm, d, nullptr, f.first_tensor, f.end_tensor);
  else
    context_.comm->allreduce_sum(d.subspan(f.begin, f.end - f.begin));
}

void DilocoStrategy::apply(FlatParams& params, Fragment& f, double alpha) {
  const float inv = 1.0f / static_cast<float>(context_.options.world.num_workers);
  const float lr = static_cast<float>(options_.outer_lr), mu = static_cast<float>(options_.outer_momentum);
  for (std::size_t i = f.begin; i < f.end; ++i) {
    const float g = delta_[i] * inv;  // Δ, the mean over workers
    if (velocity_.empty()) {
      global_[i] -= lr * g;
    } else {
      velocity_[i] = mu * velocity_[i] + g;
      global_[i] -= lr * (options_.nesterov ? g + mu * velocity_[i] : velocity_[i]);
    }
  }
  auto w = params.weights();
  if (alpha == 0) {
    std::copy(global_.begin() + f.begin, global_.begin() + f.end, w.begin() + f.begin);
  } else {
    const float a = static_cast<float>(alpha), b = static_cast<float>(1 - alpha);
    for (std::size_t i = f.begin; i < f.end; ++i) w[i] = a * w[i] + b * global_[i];
  }
}

void DilocoStrategy::wait_all() {
  ScopedTimer wait(&comm_wait_s_);
  for (Fragment& f : fragments_)
    if (f.pending) f.ticket.wait();
}

void DilocoStrategy::finish(FlatParams& params) {
  // Outer gradients in flight are applied now, mixed as they would have been τ steps after
  // their send; every fragment with inner steps since its last synchronisation is synchronised
  // once more; the model ends on the global weights.
  wait_all();
  if (steps_ == 0)  // no inner step (a run within its warm start): the weights are θ
    std::copy(params.weights().begin(), params.weights().end(), global_.begin());
  for (Fragment& f : fragments_) {
    if (f.pending) {
      f.ticket = comm::Ticket();
      f.pending = false;
      apply(params, f, options_.alpha);
    }
    if (f.last_sync == steps_) continue;
    take_delta(params, f);
    exchange_and_apply(params, f, 0);
  }
  std::copy(global_.begin(), global_.end(), params.weights().begin());
  comm_thread_.stop();
}

void DilocoStrategy::save_state(StateWriter& out, FlatParams& params, std::int64_t) {
  // The outer gradients in flight are received, not applied: the resumed run applies them at the
  // step the uninterrupted one would.
  wait_all();
  for (Fragment& f : fragments_)
    if (f.pending) f.ticket = comm::Ticket();
  out.put("weights", params.weights());
  out.put("global", global_);
  out.put("delta", delta_);
  if (!velocity_.empty()) out.put("outer_velocity", velocity_);
  if (inner_) inner_->save_state(out, "inner_velocity");
  out.put_u64("steps", static_cast<std::uint64_t>(steps_));
  for (std::size_t p = 0; p < fragments_.size(); ++p) {
    const std::string key = "fragment" + std::to_string(p);
    out.put_u64(key + ".last_sync", static_cast<std::uint64_t>(fragments_[p].last_sync));
    out.put_u64(key + ".sent_at", fragments_[p].pending ? static_cast<std::uint64_t>(fragments_[p].sent_at) + 1 : 0);
  }
  if (codecs_) codecs_->save_state(out);
}

void DilocoStrategy::load_state(const StateReader& in, FlatParams& params) {
  in.floats_into("weights", params.weights());
  in.floats_into("global", global_);
  in.floats_into("delta", delta_);
  if (!velocity_.empty()) in.floats_into("outer_velocity", velocity_);
  if (inner_) inner_->load_state(in, "inner_velocity");
  steps_ = static_cast<std::int64_t>(in.u64("steps"));
  for (std::size_t p = 0; p < fragments_.size(); ++p) {
    const std::string key = "fragment" + std::to_string(p);
    Fragment& f = fragments_[p];
    f.last_sync = static_cast<std::int64_t>(in.u64(key + ".last_sync"));
    const std::uint64_t sent = in.u64(key + ".sent_at");  // 0: nothing in flight, else sent_at + 1
    f.pending = sent > 0;
    f.sent_at = f.pending ? static_cast<std::int64_t>(sent - 1) : 0;
    f.ticket = comm::Ticket();  // its sum is in "delta"
  }
  if (codecs_) codecs_->load_state(in);
}

}  // namespace ferry::train
