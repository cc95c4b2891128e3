#include "train/wfbp_strategy.h"

#include <torch/types.h>

#include <algorithm>
#include <cstring>

#include "core/clock.h"
#include "core/error.h"
#include "core/finite.h"
#include "train/checkpoint.h"
#include "train/ps_setup.h"

namespace ferry::train {

WfbpStrategy::WfbpStrategy(const StrategyContext& context)
    : context_(context), options_(WfbpOptions::of_spec(strategy_spec(context.options, name()))) {}

WfbpStrategy::~WfbpStrategy() {
  remove_hooks();
  thread_.stop();
}

void WfbpStrategy::setup(FlatParams& params) {
  params_ = &params;
  auto& comm = *context_.comm;
  const bool ps = context_.options.topology == Topology::kParameterServer;
  const auto bucket_elems =
      std::max<std::size_t>(1, static_cast<std::size_t>(options_.bucket_mb * 1e6 / sizeof(float)));
  // Buckets of consecutive parameters, from the last layer backwards: backward produces the
  // gradients in about that order, and each bucket is one contiguous flat range.
  const std::size_t n = params.num_params();
  bucket_of_.assign(n, 0);
  for (std::size_t i = n; i-- > 0;) {
    if (buckets_.empty() || buckets_.back().end - buckets_.back().begin >= bucket_elems) {
      buckets_.emplace_back();
      buckets_.back().end = params.offset(i) + params.numels()[i];
    }
    Bucket& b = buckets_.back();
    b.begin = params.offset(i);
    b.params.push_back(i);
    bucket_of_[i] = buckets_.size() - 1;
  }
  ready_.assign(n, false);
  fused_.assign(params.size(), 0.0f);
  for (auto& b : buckets_) b.pending = b.params.size();
  if (ps) {
    layout_ = make_key_layout(params.numels(), context_.options.world);
    kv_ = make_kv_worker(comm, *layout_, context_.options, shapes_of(params));
    for (const auto& k : layout_->keys()) buckets_[bucket_of_[k.tensor]].keys.push_back(k.key);
    pulled_.assign(params.size(), 0.0f);
    init_from_worker0(*kv_, comm, params);
  } else {
    ps::SgdOptions sgd = context_.options.sgd;
    sgd.rescale = 1.0f / context_.options.world.num_workers;
    for (auto& b : buckets_) b.optimizer = std::make_unique<ps::SgdOptimizer>(b.end - b.begin, sgd);
    comm.broadcast(std::as_writable_bytes(params.weights()), 0);
  }
  thread_.start();
  for (std::size_t i = 0; i < n; ++i) {
    at::Tensor p = params.param(i);  // shares the model's tensor
    unsigned h = p.register_hook([this, i](const at::Tensor& g) { on_grad(i, g); });
    hooks_.emplace_back(p, h);
  }
}

void WfbpStrategy::on_grad(std::size_t i, const at::Tensor& grad) {
  FERRY_CHECK(!ready_[i], "wfbp: parameter ", i, " received two gradients in one backward pass (a parameter "
              "used twice in the graph is not supported)");
  ready_[i] = true;
  complete_bucket(bucket_of_[i]);  // the last step's transfer, if no forward gate completed it
  at::Tensor g = grad.contiguous();
  FERRY_CHECK(static_cast<std::size_t>(g.numel()) == params_->numels()[i] && g.scalar_type() == at::kFloat);
  std::memcpy(fused_.data() + params_->offset(i), g.data_ptr<float>(), params_->numels()[i] * sizeof(float));
  Bucket& b = buckets_[bucket_of_[i]];
  if (--b.pending == 0) launch(bucket_of_[i]);
}

void WfbpStrategy::launch(std::size_t index) {
  Bucket& b = buckets_[index];
  std::span<float> range(fused_.data() + b.begin, b.end - b.begin);
  if (!kv_) {
    b.sent = thread_.submit([this, range] { context_.comm->allreduce_sum(range); });
    return;
  }
  const auto version = static_cast<std::uint64_t>(steps_) + 1;
  b.sent = thread_.submit([this, &b, version] {
    std::vector<comm::Ticket> ops;
    for (int key : b.keys) {
      const auto& k = layout_->key(key);
      ops.push_back(kv_->push(key, std::span<const float>(fused_).subspan(k.offset, k.length)));
    }
    for (int key : b.keys) {
      const auto& k = layout_->key(key);
      ops.push_back(kv_->pull(key, std::span<float>(pulled_).subspan(k.offset, k.length), version));
    }
    b.in_flight = comm::when_all(std::move(ops));
  });
}

void WfbpStrategy::step(FlatParams& params, std::int64_t iteration) {
  FERRY_CHECK(&params == params_, "wfbp: step() with other parameters than setup()");
  // Parameters whose hook did not fire: their gradient is in the flat buffer (zero if unused).
  for (std::size_t bi = 0; bi < buckets_.size(); ++bi) {
    Bucket& b = buckets_[bi];
    if (b.pending == 0) continue;
    complete_bucket(bi);
    for (std::size_t i : b.params) {
      if (ready_[i]) continue;
      auto g = params.grads().subspan(params.offset(i), params.numels()[i]);
      std::copy(g.begin(), g.end(), fused_.begin() + static_cast<std::ptrdiff_t>(params.offset(i)));
      ready_[i] = true;
    }
    b.pending = 0;
    launch(bi);
  }
  for (Bucket& b : buckets_) b.pending = b.params.size();
  std::fill(ready_.begin(), ready_.end(), false);
  steps_ = iteration + 1;
  // The buckets complete when the next forward enters their first layer (layer_gate()), so the
  // back layers' communication overlaps the front layers' forward; without a gate, now.
  if (!gated_) complete(params);
}

std::function<void(std::size_t, std::size_t)> WfbpStrategy::layer_gate() {
  gated_ = true;
  return [this](std::size_t first, std::size_t count) {
    for (std::size_t i = first; i < first + count; ++i) complete_bucket(bucket_of_[i]);
  };
}

void WfbpStrategy::complete(FlatParams& params) {
  FERRY_CHECK(&params == params_, "wfbp: complete() with other parameters than setup()");
  // Front layers first (the last bucket holds the first layers), as the next forward needs them.
  for (std::size_t bi = buckets_.size(); bi-- > 0;) complete_bucket(bi);
}

void WfbpStrategy::complete_bucket(std::size_t index) {
  Bucket& b = buckets_[index];
  if (!b.sent) return;
  {
    ScopedTimer wait(&comm_wait_s_);
    b.sent->wait();
    if (b.in_flight) b.in_flight->wait();
  }
  b.sent.reset();
  b.in_flight.reset();
  auto w = params_->weights().subspan(b.begin, b.end - b.begin);
  const auto sum = std::span<const float>(fused_).subspan(b.begin, b.end - b.begin);
  if (!b.optimizer)  // ps: the servers skipped the round of any key whose sum was not finite
    std::copy(pulled_.begin() + static_cast<std::ptrdiff_t>(b.begin),
              pulled_.begin() + static_cast<std::ptrdiff_t>(b.end), w.begin());
  else if (all_finite(sum))  // allreduce: NaN and Inf survive the sum; every worker skips alike
    b.optimizer->step(w, sum);
}

void WfbpStrategy::skip_step(FlatParams& params, std::int64_t iteration) {
  step(params, iteration);  // the gradient is already on its way; step() handles the skip
}

// Once the buckets in flight are complete, the state is the weights, the iteration count (the
// PS pull version) and, with allreduce, each bucket's optimizer velocity, in the flat layout.
void WfbpStrategy::save_state(StateWriter& out, FlatParams& params, std::int64_t iterations) {
  complete(params);
  if (kv_) {
    ScopedTimer wait(&comm_wait_s_);
    const auto done = static_cast<std::uint64_t>(iterations);
    thread_.submit([this, done] { kv_->checkpoint(done); }).wait();
  }
  out.put("weights", params.weights());
  out.put_u64("steps", static_cast<std::uint64_t>(steps_));
  if (kv_) return;
  std::vector<float> velocity(params.size(), 0.0f);
  for (const Bucket& b : buckets_) {
    auto v = b.optimizer->velocity();
    std::copy(v.begin(), v.end(), velocity.begin() + static_cast<std::ptrdiff_t>(b.begin));
  }
  out.put("velocity", velocity);
}

void WfbpStrategy::load_state(const StateReader& in, FlatParams& params) {
  in.floats_into("weights", params.weights());
  steps_ = static_cast<std::int64_t>(in.u64("steps"));
  if (kv_) return;
  std::vector<float> velocity(params.size());
  in.floats_into("velocity", velocity);
  for (Bucket& b : buckets_) {
    auto v = b.optimizer->mutable_velocity();
    std::copy_n(velocity.begin() + static_cast<std::ptrdiff_t>(b.begin), v.size(), v.begin());
  }
}

void WfbpStrategy::remove_hooks() {
  for (auto& [p, h] : hooks_) p.remove_hook(h);
  hooks_.clear();
}

void WfbpStrategy::finish(FlatParams& params) {
  complete(params);
  remove_hooks();
  thread_.stop();
  if (kv_) kv_->shutdown();
}

}  // namespace ferry::train
