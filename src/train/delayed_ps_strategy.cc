#include "train/delayed_ps_strategy.h"

#include <algorithm>
#include <cstring>

#include "core/clock.h"
#include "core/error.h"
#include "train/checkpoint.h"
#include "train/ps_setup.h"

namespace ferry::train {

DelayedPsStrategy::DelayedPsStrategy(const StrategyContext& context, std::string name, DelayedPsSchedule schedule)
    : context_(context), name_(std::move(name)), schedule_(std::move(schedule)) {
  FERRY_REQUIRE(context.options.topology == Topology::kParameterServer, name_,
                " needs --topology ps (its delayed pulls are parameter-server pulls)");
  const DelayedPsOptions& d = schedule_.delayed;
  FERRY_REQUIRE_GE(schedule_.pull_every, 1, name_, ": pull interval");
  warmup_ = d.warmup_steps;
  lr_local_ = d.lr_local > 0 ? d.lr_local : context.options.sgd.lr;
}

DelayedPsStrategy::~DelayedPsStrategy() { thread_.stop(); }

void DelayedPsStrategy::setup(FlatParams& params) {
  auto& comm = *context_.comm;
  layout_ = make_key_layout(params.numels(), context_.options.world);
  kv_ = make_kv_worker(comm, *layout_, context_.options, shapes_of(params));
  if (!is_uncompressed(schedule_.codec))
    push_codecs_ =
        std::make_unique<KeyPushCodecs>(schedule_.codec, *layout_, shapes_of(params), comm.rank(), context_.options.batch);
  // The servers split the optimizer by the run's codec (ps_setup.h); so does every push here.
  if (const OptimizerSplit split = split_optimizer(context_.options.codec, context_.options.sgd); split.on_worker)
    momentum_ = std::make_unique<WorkerMomentum>(params.size(), split);
  ps::SgdOptions local = context_.options.sgd;
  local.lr = lr_local_;
  local.rescale = 1.0f;
  local_opt_ = std::make_unique<ps::SgdOptimizer>(params.size(), local);
  pulled_.assign(params.size(), 0.0f);
  init_from_worker0(*kv_, comm, params);
  record_pull(params.weights(), 0);
  thread_.start();
}

void DelayedPsStrategy::step(FlatParams& params, std::int64_t iteration) { run_step(params, iteration, true); }

// The push becomes a skip push (the servers drop the whole round); no local step is taken. A
// healthy worker's local step of the same iteration stands until its next pull replaces it.
void DelayedPsStrategy::skip_step(FlatParams& params, std::int64_t iteration) { run_step(params, iteration, false); }

void DelayedPsStrategy::run_step(FlatParams& params, std::int64_t iteration, bool finite) {
  if (iteration < warmup_)
    warmup_step(params, iteration, finite);
  else
    delayed_step(params, iteration, finite);
  steps_ = iteration + 1;
}

void DelayedPsStrategy::warmup_step(FlatParams& params, std::int64_t t, bool finite) {
  ScopedTimer wait(&comm_wait_s_);
  launch_push(params.grads(), params.weights(), finite ? PushKind::kFull : PushKind::kSkip);
  const auto version = static_cast<std::uint64_t>(t) + 1;
  thread_.submit([this, version] { kv_->pull_all(pulled_, version).wait(); }).wait();
  std::copy(pulled_.begin(), pulled_.end(), params.weights().begin());
  record_pull(pulled_, version);
}

void DelayedPsStrategy::delayed_step(FlatParams& params, std::int64_t t, bool finite) {
  if (pending_pull_) {
    {
      ScopedTimer wait(&comm_wait_s_);
      pending_pull_->wait();
    }
    pending_pull_.reset();
    std::copy(pulled_.begin(), pulled_.end(), params.weights().begin());
    record_pull(pulled_, pending_version_);
  }
  const std::int64_t since = t - warmup_ + 1;  // 1-based index of this post-warm-up iteration
  const bool full = schedule_.full_precision_every > 0 && since % schedule_.full_precision_every == 0;
  launch_push(params.grads(), params.weights(),
              !finite                  ? PushKind::kSkip
                             : push_codecs_ && !full ? PushKind::kCompressed
                                                     : PushKind::kFull);
  if (since % schedule_.pull_every == 0) {
    pending_version_ = static_cast<std::uint64_t>(t) + 1;
    const auto version = pending_version_;
    pending_pull_ = thread_.submit([this, version] { kv_->pull_all(pulled_, version).wait(); });
  }
  if (!finite) return;
  // The local step uses this worker's full-precision gradient.
  local_opt_->set_lr(local_lr(t));
  auto w = params.weights();
  local_opt_->step(w, params.grads());
  if (schedule_.glu && have_glu_) {
    const float c = schedule_.glu_coef;
    for (std::size_t i = 0; i < w.size(); ++i) w[i] += c * glu_dir_[i];
  }
}

void DelayedPsStrategy::launch_push(std::span<const float> grad, std::span<const float> weights, PushKind kind) {
  while (pushes_.size() >= kMaxPushesInFlight) {
    ScopedTimer wait(&comm_wait_s_);
    pushes_.front().wait();
    pushes_.pop_front();
  }
  if (kind == PushKind::kSkip) {
    pushes_.push_back(thread_.submit([this] { kv_->push_skip_all().wait(); }));
    return;
  }
  // The next backward overwrites the gradient buffer: the push sends a copy.
  std::vector<float> copy(grad.begin(), grad.end());
  std::vector<float> w;
  if (momentum_ && momentum_->needs_weights()) w.assign(weights.begin(), weights.end());
  pushes_.push_back(thread_.submit([this, g = std::move(copy), w = std::move(w), kind]() mutable {
    if (momentum_) momentum_->apply(g, w);
    (kind == PushKind::kCompressed ? push_codecs_->push_all(*kv_, g, momentum_.get()) : kv_->push_all(g)).wait();
  }));
}

void DelayedPsStrategy::record_pull(std::span<const float> weights, std::uint64_t version) {
  if (!schedule_.glu) return;
  if (!last_pull_.empty() && version > last_pull_version_) {
    const float inv = 1.0f / static_cast<float>(version - last_pull_version_);
    glu_dir_.resize(weights.size());
    for (std::size_t i = 0; i < weights.size(); ++i) glu_dir_[i] = (weights[i] - last_pull_[i]) * inv;
    have_glu_ = true;
  }
  last_pull_.assign(weights.begin(), weights.end());
  last_pull_version_ = version;
}

float DelayedPsStrategy::local_lr(std::int64_t t) const {
  const std::int64_t ramp = schedule_.delayed.lr_warmup_steps;
  if (ramp <= 0) return lr_local_;
  const double f = std::min(1.0, static_cast<double>(t - warmup_ + 1) / static_cast<double>(ramp));
  return static_cast<float>(lr_local_ * f);
}

void DelayedPsStrategy::save_state(StateWriter& out, FlatParams& params, std::int64_t iterations) {
  {
    ScopedTimer wait(&comm_wait_s_);
    for (auto& p : pushes_) p.wait();
    pushes_.clear();
    // A pull launched after this iteration completes now; the next step consumes it as usual.
    if (pending_pull_) pending_pull_->wait();
    const auto done = static_cast<std::uint64_t>(iterations);
    thread_.submit([this, done] { kv_->checkpoint(done); }).wait();
  }
  out.put("weights", params.weights());
  out.put("local_velocity", local_opt_->velocity());
  if (momentum_) out.put("worker_velocity", momentum_->velocity());
  out.put("pulled", pulled_);
  out.put_u64("pull_pending", pending_pull_ ? 1 : 0);
  out.put_u64("pending_version", pending_version_);
  out.put("last_pull", last_pull_);
  out.put_u64("last_pull_version", last_pull_version_);
  out.put("glu_dir", glu_dir_);
  out.put_u64("have_glu", have_glu_ ? 1 : 0);
  out.put_u64("steps", static_cast<std::uint64_t>(steps_));
  if (push_codecs_) push_codecs_->save_state(out);
}

void DelayedPsStrategy::load_state(const StateReader& in, FlatParams& params) {
  in.floats_into("weights", params.weights());
  in.floats_into("local_velocity", local_opt_->mutable_velocity());
  if (momentum_) in.floats_into("worker_velocity", momentum_->mutable_velocity());
  in.floats_into("pulled", pulled_);
  // The pull was complete when the checkpoint was taken: an already completed ticket.
  if (in.u64("pull_pending") != 0) pending_pull_.emplace();
  pending_version_ = in.u64("pending_version");
  last_pull_ = in.floats("last_pull");
  last_pull_version_ = in.u64("last_pull_version");
  glu_dir_ = in.floats("glu_dir");
  have_glu_ = in.u64("have_glu") != 0;
  steps_ = static_cast<std::int64_t>(in.u64("steps"));
  if (push_codecs_) push_codecs_->load_state(in);
}

void DelayedPsStrategy::finish(FlatParams& params) {
  {
    ScopedTimer wait(&comm_wait_s_);
    for (auto& p : pushes_) p.wait();
    pushes_.clear();
    const auto final_version = static_cast<std::uint64_t>(steps_);
    if (pending_pull_) {
      pending_pull_->wait();
      pending_pull_.reset();
    }
    if (steps_ > 0 && pending_version_ != final_version)
      thread_.submit([this, final_version] { kv_->pull_all(pulled_, final_version).wait(); }).wait();
  }
  if (steps_ > 0) std::copy(pulled_.begin(), pulled_.end(), params.weights().begin());
  thread_.stop();
  kv_->shutdown();
}

}  // namespace ferry::train
