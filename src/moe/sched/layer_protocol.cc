#include "moe/sched/layer_protocol.h"

#include "core/clock.h"

namespace ferry::moe {
namespace {

// Adds the time of its scope to *total when total is given (the simulator and the replay leave
// it null: their results must not depend on this machine's clock).
class MaybeTimer {
 public:
  explicit MaybeTimer(double* total) : total_(total), t0_(total ? now_s() : 0) {}
  ~MaybeTimer() {
    if (total_) *total_ += now_s() - t0_;
  }
  MaybeTimer(const MaybeTimer&) = delete;
  MaybeTimer& operator=(const MaybeTimer&) = delete;

 private:
  double* total_;
  double t0_;
};

}  // namespace

void LayerProtocol::run_layer(const RouteInfo& route, LayerBackend& backend) {
  const std::size_t n = route.experts.size();
  const int l = route.layer;
  LayerDispatch& d = layer_;
  d.route = &route;
  d.placement.assign(n, Placement::kDevice);
  {
    MaybeTimer t(policy_s_);
    policy_.on_route(route, d.placement);
  }
  if (!host_available_) d.placement.assign(n, Placement::kDevice);
  // Pin what is there before any callback can move it.
  d.fate.assign(n, ExpertFate::kLoading);
  d.was_resident.assign(n, 0);
  counts_.accesses += n;
  for (std::size_t i = 0; i < n; ++i) {
    const ExpertId id{l, route.experts[i]};
    d.was_resident[i] = backend.contains(id);
    if (d.placement[i] == Placement::kHost) {
      d.fate[i] = ExpertFate::kHost;
      ++counts_.host_placed;
    } else if (d.was_resident[i]) {
      d.fate[i] = ExpertFate::kHit;
      ++counts_.hits;
      backend.pin_hit(id);
    }
  }
  {
    MaybeTimer t(policy_s_);
    for (std::size_t i = 0; i < n; ++i)
      if (d.placement[i] == Placement::kDevice) policy_.on_access({l, route.experts[i]}, d.fate[i] == ExpertFate::kHit);
  }
  // Demand loads in expert order; they overtake every prefetch still queued.
  for (std::size_t i = 0; i < n; ++i) {
    if (d.fate[i] != ExpertFate::kLoading) continue;
    if (backend.load({l, route.experts[i]})) {
      ++counts_.loads;
    } else {
      d.fate[i] = ExpertFate::kNoRoom;
      ++counts_.no_room;
    }
  }
  {
    MaybeTimer t(policy_s_);
    policy_.on_dispatched(route);
  }
  backend.compute(d);
  MaybeTimer t(policy_s_);
  policy_.on_layer_done(l);
}

void LayerProtocol::step_done() {
  MaybeTimer t(policy_s_);
  policy_.on_step_done();
}

}  // namespace ferry::moe
