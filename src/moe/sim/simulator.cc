#include "moe/sim/simulator.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/error.h"
#include "moe/sched/layer_protocol.h"
#include "moe/store/device_slots.h"

namespace ferry::moe {

namespace {

// The device cache and the link, in simulated time. The slots and the victim rule are the
// ExpertStore's own (DeviceSlots): an expert has arrived when its job has ended by now, and leaving
// cancels its job. The link serves queued transfers one at a time, lowest priority value first,
// FIFO among equals. A demand load pre-empts a running prefetch at its next chunk boundary (the
// prefetch is queued again with what it has left), so it waits at most one chunk for it, as the
// AsyncIO thread does. Jobs start lazily: the queue only changes in policy callbacks, so starting
// them when time is advanced gives the same order.
class SimCache : public ExpertCache, private SlotTransfers {
 public:
  SimCache(std::uint64_t capacity, std::uint64_t expert_bytes, double transfer_s, double chunk_s)
      : slots_({capacity, expert_bytes}, this), job_of_slot_(capacity), T_(transfer_s), chunk_s_(chunk_s) {}

  bool contains(ExpertId id) const override { return slots_.contains(id); }
  bool prefetch(ExpertId id, int priority) override {
    if (contains(id) || !add(id, priority, true)) return false;
    ++prefetches;
    return true;
  }
  bool evict(ExpertId id) override { return slots_.evict(id); }
  std::vector<ExpertId> evictable() const override { return slots_.evictable(); }
  std::uint64_t budget_bytes() const override { return slots_.budget_bytes(); }
  std::uint64_t used_bytes() const override { return slots_.used_bytes(); }
  std::uint64_t expert_bytes() const override { return slots_.slot_bytes(); }

  // Moves simulated time to t: transfers the link could start by then start.
  void set_now(double t) {
    while (link_free_ <= t && !queue_.empty()) run_next();
    now_ = t;
  }
  // Demand load: raises a queued transfer to demand priority, or makes room (DeviceSlots::make_room)
  // and queues one. False when every slot is pinned.
  bool request(ExpertId id, EvictionAdvisor& advisor) {
    if (const int slot = slots_.slot(id); slot >= 0) {
      Job& j = jobs_[job_of_slot_[slot]];
      if (j.state == State::kQueued && j.priority != kPriorityDemand)
        j.priority = kPriorityDemand, j.demand_s = now_, preempt_prefetch();
      return true;
    }
    if (!slots_.make_room(id, &advisor)) return false;
    add(id, kPriorityDemand, false);
    ++loads;
    preempt_prefetch();
    return true;
  }
  // When the expert's bytes are in place (runs the link as far as needed).
  double ready_s(ExpertId id) {
    const int slot = slots_.slot(id);
    FERRY_CHECK(slot >= 0, "ready_s of an absent expert ", id.layer, "/", id.expert);
    const std::size_t j = job_of_slot_[slot];
    while (jobs_[j].state == State::kQueued) run_next();
    return jobs_[j].end_s;
  }
  void pin(ExpertId id) { slots_.pin(id); }
  void unpin(ExpertId id) { slots_.unpin(id); }
  // True the first time a prefetched expert is used.
  bool take_prefetched(ExpertId id) { return slots_.take_speculative(id); }
  // Everything queued is in place at time 0 and not counted (the start-up fill of static placements).
  void complete_all_at_zero() {
    for (std::size_t j : queue_) jobs_[j].state = State::kStarted, jobs_[j].start_s = jobs_[j].end_s = 0;
    queue_.clear();
    slots_.clear_speculative();
    prefetches = 0;
  }

  std::uint64_t prefetches = 0, loads = 0, cancelled = 0, preempted = 0;
  double max_prefetch_delay_s = 0;  // longest a demand load waited for a prefetch on the link
  double busy_s = 0;  // link time spent moving bytes (cancelled and pre-empted rests excluded)
  std::uint64_t bytes_moved = 0;

 private:
  enum class State { kQueued, kStarted, kCancelled };
  struct Job {
    ExpertId id;
    int priority = 0;
    std::uint64_t seq = 0;
    double submit_s = 0, start_s = 0, end_s = 0;
    double left_s = 0;  // link time still to go when it (re)starts
    std::uint64_t left_bytes = 0;  // ... and its bytes
    double demand_s = 0;  // when it became a demand load
    State state = State::kQueued;
  };
  // SlotTransfers: arrived when its job has ended by now; leaving cancels the job.
  bool arrived(ExpertId, int slot) const override {
    const Job& j = jobs_[job_of_slot_[slot]];
    return j.state == State::kStarted && j.end_s <= now_;
  }
  void release(ExpertId, int slot) override { cancel(jobs_[job_of_slot_[slot]]); }

  // Reserves a slot and queues its transfer; false when every slot is taken.
  bool add(ExpertId id, int priority, bool prefetched) {
    const int slot = slots_.reserve(id, prefetched);
    if (slot < 0) return false;
    jobs_.push_back(Job{id, priority, jobs_.size(), now_, 0, 0, T_, expert_bytes(), now_, State::kQueued});
    queue_.push_back(jobs_.size() - 1);
    job_of_slot_[slot] = jobs_.size() - 1;
    return true;
  }
  void run_next() {
    auto best = std::min_element(queue_.begin(), queue_.end(), [&](std::size_t a, std::size_t b) {
      return jobs_[a].priority != jobs_[b].priority ? jobs_[a].priority < jobs_[b].priority : jobs_[a].seq < jobs_[b].seq;
    });
    Job& j = jobs_[*best];
    queue_.erase(best);
    j.state = State::kStarted;
    j.start_s = std::max(link_free_, j.submit_s);
    j.end_s = j.start_s + j.left_s;
    link_free_ = j.end_s;
    busy_s += j.left_s;
    bytes_moved += j.left_bytes;
    running_ = static_cast<std::size_t>(&j - jobs_.data());
    if (j.priority == kPriorityDemand) {  // what a prefetch cost it: the wait not spent behind demand work
      max_prefetch_delay_s = std::max(max_prefetch_delay_s, j.start_s - std::max(j.demand_s, last_demand_end_));
      last_demand_end_ = j.end_s;
    }
  }
  // A demand load was queued: the prefetch on the link stops at its next chunk boundary (or does
  // not start, if the link only reached it lazily after now) and waits in the queue with the rest.
  void preempt_prefetch() {
    if (running_ >= jobs_.size()) return;
    Job& j = jobs_[running_];
    if (j.state != State::kStarted || j.priority <= kPriorityDemand || j.end_s <= now_) return;
    const double stop = next_chunk_s(j);
    if (stop >= j.end_s) return;
    stop_at(j, stop);
    j.state = State::kQueued;
    queue_.push_back(running_);
    running_ = jobs_.size();
    ++preempted;
  }
  // The first chunk boundary of a started job's segment at or after now (its start if later).
  double next_chunk_s(const Job& j) const {
    const double into = std::max(0.0, now_ - j.start_s);
    return std::min(j.end_s, j.start_s + std::ceil(into / chunk_s_) * chunk_s_);
  }
  // A started job's segment ends at `stop`: the link time and bytes after it are not spent and
  // are what is left of the job (all of it when it stops at its start).
  void stop_at(Job& j, double stop) {
    const std::uint64_t undone =
        stop <= j.start_s ? j.left_bytes
                          : std::min(j.left_bytes, static_cast<std::uint64_t>(std::llround(
                                                       (j.end_s - stop) / T_ * static_cast<double>(expert_bytes()))));
    busy_s -= j.end_s - stop;
    bytes_moved -= undone;
    j.left_s = j.end_s - stop;
    j.left_bytes = undone;
    if (link_free_ == j.end_s) link_free_ = stop;
    j.end_s = stop;
  }
  // Queued: dropped. Running: stops at the next chunk boundary; the link is free from there.
  void cancel(Job& j) {
    if (j.state == State::kQueued) {
      queue_.erase(std::find(queue_.begin(), queue_.end(), static_cast<std::size_t>(&j - jobs_.data())));
      j.state = State::kCancelled;
      ++cancelled;
    } else if (j.state == State::kStarted && j.end_s > now_) {
      stop_at(j, next_chunk_s(j));
      j.state = State::kCancelled;
      ++cancelled;
    }
  }

  DeviceSlots slots_;
  std::vector<std::size_t> job_of_slot_;  // per slot: its transfer's job (jobs_ index)
  double T_, chunk_s_;
  double now_ = 0, link_free_ = 0;
  double last_demand_end_ = 0;        // when the last demand transfer started so far ends
  std::size_t running_ = SIZE_MAX;  // the job the link started last (it runs until link_free_)
  std::vector<Job> jobs_;
  std::vector<std::size_t> queue_;
};

// The simulator's side of the layer protocol: the SimCache, and time on three resources. The
// device runs the dense part, then its experts in the order their bytes arrive (waiting for bytes
// is io_wait); the host runs host-placed experts one after another, in parallel with the device;
// the layer ends when both are done.
class SimLayer : public LayerBackend {
 public:
  SimLayer(SimCache& cache, EvictionAdvisor& advisor, const TimeModel& time, SimResult& r)
      : cache_(cache), advisor_(advisor), time_(time), r_(r) {}

  bool contains(ExpertId id) override { return cache_.contains(id); }
  void pin_hit(ExpertId id) override {
    cache_.pin(id);
    if (cache_.take_prefetched(id)) ++r_.prefetches_used, ++r_.needed;
  }
  bool load(ExpertId id) override {
    if (!cache_.request(id, advisor_)) return false;
    cache_.take_prefetched(id);
    cache_.pin(id);
    return true;
  }
  void compute(const LayerDispatch& d) override {
    const RouteInfo& route = *d.route;
    const int l = route.layer;
    const std::size_t n = route.experts.size();
    double host_s = 0;
    for (std::size_t i = 0; i < n; ++i)
      if (d.fate[i] == ExpertFate::kHost) {
        r_.needed += !d.was_resident[i];
        host_s += time_.host_expert_s(route.tokens_per_expert[i]);
      }
    for (std::size_t i = 0; i < n; ++i)
      if (d.fate[i] == ExpertFate::kLoading || d.fate[i] == ExpertFate::kNoRoom) ++r_.needed;
    for (std::size_t i = 0; i < n; ++i)  // every slot pinned by this layer: the expert runs on the host
      if (d.fate[i] == ExpertFate::kNoRoom) host_s += time_.host_expert_s(route.tokens_per_expert[i]);
    // Device: experts in the order their bytes arrive (hits, then demand loads, as pinned).
    runs_.clear();
    pinned_.clear();
    for (ExpertFate f : {ExpertFate::kHit, ExpertFate::kLoading})
      for (std::size_t i = 0; i < n; ++i)
        if (d.fate[i] == f) {
          const ExpertId id{l, route.experts[i]};
          pinned_.push_back(id);
          runs_.push_back({cache_.ready_s(id), route.tokens_per_expert[i]});
        }
    std::sort(runs_.begin(), runs_.end(), [](const Run& a, const Run& b) { return a.ready < b.ready; });
    double dev = start_;
    for (const Run& run : runs_) {
      if (run.ready > dev) r_.io_wait_s += run.ready - dev, dev = run.ready;
      const double c = time_.device_expert_s(run.tokens);
      dev += c;
      device_compute += c;
    }
    host_free_ = std::max(host_free_, start_) + host_s;
    device_free = std::max(dev, host_s > 0 ? host_free_ : dev);
    cache_.set_now(device_free);  // the layer is done: what the policy drops now has arrived
    for (ExpertId id : pinned_) cache_.unpin(id);
  }

  // The dense part of a layer: the device starts its experts after it.
  void begin_layer(double dense_s) {
    device_free += dense_s;
    device_compute += dense_s;
    start_ = device_free;
    cache_.set_now(start_);
  }

  double device_free = 0;     // when the device is next idle: the simulated clock
  double device_compute = 0;  // modelled device compute so far

 private:
  struct Run {
    double ready;
    int tokens;
  };
  SimCache& cache_;
  EvictionAdvisor& advisor_;  // the policy, outlives the layer
  const TimeModel& time_;
  SimResult& r_;
  double start_ = 0, host_free_ = 0;
  std::vector<Run> runs_;
  std::vector<ExpertId> pinned_;
};

}  // namespace

SimResult simulate(const FutureRouting& routing, Policy& policy, const TimeModel& time, const SimOptions& options) {
  const ModelShape& shape = time.shape();
  FERRY_REQUIRE(routing.num_layers == shape.moe_layers(), "the trace has ", routing.num_layers,
                " layers, model shape '", shape.name, "' ", shape.moe_layers(), " MoE layers");
  FERRY_REQUIRE(routing.num_experts <= shape.experts, "the trace routes to ", routing.num_experts,
                " experts per layer, model shape '", shape.name, "' has ", shape.experts);
  FERRY_REQUIRE(options.capacity_experts >= 1, "the device holds no expert (capacity 0)");
  const double T = time.transfer_s();
  const std::uint64_t expert_bytes = static_cast<std::uint64_t>(shape.expert_bytes());
  SimCache cache(options.capacity_experts, expert_bytes, T,
                 std::max(1e-9, T * static_cast<double>(options.chunk_bytes) / shape.expert_bytes()));
  const int moe_layers = shape.moe_layers();
  policy.attach(PolicyContext{&cache, nullptr, moe_layers, shape.experts, shape.top_k, time.cost_model(options.batch)});
  if (options.warm_start) cache.complete_all_at_zero();

  SimResult r;
  r.policy = policy.name();
  r.batch = options.batch;
  r.capacity_experts = options.capacity_experts;
  const double dense_s = time.device_layer_s(options.batch);
  const double leading_s = time.dense_layers_s(options.batch);  // the dense layers run before MoE layer 0
  SimLayer sim(cache, policy, time, r);
  LayerProtocol protocol(policy);
  for (const auto& step : routing.steps) {
    for (int l = 0; l < moe_layers; ++l) {
      const LayerRoute& lr = step[l];
      sim.begin_layer(l == 0 ? leading_s + dense_s : dense_s);
      protocol.run_layer(RouteInfo{l, lr.experts, lr.tokens, nullptr, options.batch, 0}, sim);
    }
    sim.device_free += time.step_s(options.batch);
    protocol.step_done();
  }
  const ProtocolCounts& counts = protocol.counts();
  r.accesses = counts.accesses;
  r.hits = counts.hits;
  r.host_execs = counts.host_placed + counts.no_room;
  r.steps = routing.steps.size();
  r.tokens = r.steps * options.batch;
  r.time_s = sim.device_free;
  r.loads = cache.loads;
  r.prefetches = cache.prefetches;
  r.cancelled = cache.cancelled;
  r.bytes_moved = cache.bytes_moved;
  r.preempted = cache.preempted;
  r.max_prefetch_delay_s = cache.max_prefetch_delay_s;
  r.link_busy_s = cache.busy_s;
  r.device_layer_compute_s = r.steps ? sim.device_compute / (r.steps * shape.layers) : 0;
  if (const PlanTiming t = policy.plan_timing(); t.plans)
    r.planner_s_per_plan = t.solve_s / t.plans;
  return r;
}

}  // namespace ferry::moe
