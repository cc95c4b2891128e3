// PreScope (prefetch-aware scheduling for MoE offloading): at every layer a predictor gives the
// activation probabilities of the next D layers; PreSched (presched.h) turns them, with the cache
// contents, the link and compute times and the room left, into one plan for the whole window:
// which experts to prefetch (queued on the AsyncIO thread in layer order, priority 100 + distance,
// so that demand loads overtake them), which to leave for on-demand loading and which to run on
// the host. When a layer's routing is known, the same scheduler decides host or device for its
// missing experts with the exact token counts. Victims are the experts outside the window that
// are least likely to be reused (tokens routed per step so far), then the least recently used. Given
// calibration counts, the most routed experts fill the device at the start (as static-hot and
// Fiddler start).
#include "moe/sched/prescope_policy.h"

#include <algorithm>
#include <ctime>
#include <cmath>
#include <tuple>

#include "core/error.h"

namespace ferry::moe {
namespace {

constexpr float kMinProbability = 0.05f;  // predictions below are not worth a slot
constexpr int kMaxCandidates = 2;          // non-resident candidates per layer given to the planner
constexpr double kPriorTokens = 64;        // weight of the calibration prior in the routing shares

// CPU time of this thread: the planner's own cost, whatever else the machine runs.
double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

std::size_t slot(const PolicyContext& ctx, ExpertId id) {
  return static_cast<std::size_t>(id.layer) * ctx.num_experts + id.expert;
}

}  // namespace

PreScopePolicy::PreScopePolicy(const PolicyOptions& options) : options_(options) {
  FERRY_REQUIRE(options.window >= 1 && options.window <= 8, "PreSched window of ", options.window,
                " layers: expected 1 to 8");
}

void PreScopePolicy::attach(const PolicyContext& ctx) {
  ctx_ = ctx;
  recency_.set_shape(ctx.num_layers, ctx.num_experts);
  if (options_.predictor)
    predictor_ = options_.predictor(ctx);
  else
    predictor_ = ctx.routers ? make_next_gate_predictor(ctx.routers) : nullptr;
  activations_.assign(static_cast<std::size_t>(ctx.num_layers) * ctx.num_experts, 0);
  steps_ = 0;
  window_p_.clear();
  backlog_after_plan_s_ = plan_lead_s_ = 0;
  misses_ = 0;
  prior_.clear();
  tokens_seen_ = 0;
  batch_ = 1;
  const std::size_t n = static_cast<std::size_t>(ctx.num_layers) * ctx.num_experts;
  if (options_.expert_counts.size() == n && ctx.num_layers > 0) {
    std::uint64_t tokens = 0;  // calibration tokens: the routings of layer 0 over top_k
    for (int e = 0; e < ctx.num_experts; ++e) tokens += options_.expert_counts[e];
    if (tokens > 0) {
      prior_.resize(n);
      for (std::size_t k = 0; k < n; ++k)
        prior_[k] = static_cast<double>(options_.expert_counts[k]) / (static_cast<double>(tokens) / std::max(1, ctx.top_k));
    }
  }
  // Start as the static placements do: the most routed experts of the calibration fill the device.
  if (!options_.expert_counts.empty())
    for (ExpertId id : hottest_experts(ctx, options_.expert_counts, ctx.cache->capacity_slots()))
      ctx.cache->prefetch(id, kPriorityPrefetch + id.layer);
}

// Share of tokens routed to `id`: what was seen, with the calibration (or top_k / E) as a prior
// worth kPriorTokens tokens.
double PreScopePolicy::token_rate(ExpertId id) const {
  const std::size_t k = slot(ctx_, id);
  const double prior = k < prior_.size() ? prior_[k] : static_cast<double>(ctx_.top_k) / std::max(1, ctx_.num_experts);
  return (static_cast<double>(activations_[k]) + kPriorTokens * prior) / (static_cast<double>(tokens_seen_) + kPriorTokens);
}

double PreScopePolicy::reuse(ExpertId id) const { return 1.0 - std::exp(-token_rate(id) * batch_); }

void PreScopePolicy::on_route(const RouteInfo& route, std::span<Placement> placement) {
  if (predictor_) predictor_->observe(route.layer, route.experts, {});
  batch_ = std::max(1, route.num_tokens);
  if (route.layer == 0) tokens_seen_ += batch_;
  for (std::size_t i = 0; i < route.experts.size(); ++i)
    activations_[slot(ctx_, {route.layer, route.experts[i]})] += route.tokens_per_expert[i];
  // Host or device for the missing experts, with the exact tokens: a one-layer plan, no prefetch.
  PreSchedInstance inst;
  inst.transfer_s = ctx_.cost.transfer_s;
  PreSchedLayer lay;
  bool any_missing = false;
  for (std::size_t i = 0; i < route.experts.size(); ++i) {
    const bool resident = ctx_.cache->contains({route.layer, route.experts[i]});
    any_missing |= !resident;
    lay.candidates.push_back({route.experts[i], 1.0, ctx_.cost.device_expert_s,
                              ctx_.cost.host_expert_s(route.tokens_per_expert[i]), resident});
  }
  layer_device_s_ = static_cast<double>(route.experts.size()) * ctx_.cost.device_expert_s;
  layer_host_s_ = 0;
  if (!any_missing || ctx_.cost.host_token_s <= 0 || !ctx_.cost.host_available) return;
  inst.layers.push_back(std::move(lay));
  const PreSchedPlan plan = presched_solve(inst);
  for (std::size_t i = 0; i < route.experts.size(); ++i)
    if (plan.action[0][i] == PreSchedAction::kHost) {
      placement[i] = Placement::kHost;
      layer_device_s_ -= ctx_.cost.device_expert_s;
      layer_host_s_ += ctx_.cost.host_expert_s(route.tokens_per_expert[i]);
    }
}

void PreScopePolicy::on_access(ExpertId id, bool hit) {
  recency_.touch(id);
  if (!hit) ++misses_;
}

void PreScopePolicy::predict_window(const RouteInfo& route, std::vector<WindowLayer>& out) {
  out.clear();
  if (!predictor_) return;
  PredictInput in{route.layer, route.hidden, route.num_tokens, route.hidden_size, route.experts};
  predictor_->predict(in, options_.window, scores_);
  const int E = ctx_.num_experts;
  // Tokens an expert gets if activated: the batch's share, given that it is activated.
  const double share = static_cast<double>(std::max(1, route.num_tokens)) * ctx_.top_k / std::max(1, E);
  for (std::size_t d = 0; d < scores_.size(); ++d) {
    WindowLayer w;
    w.layer = route.layer + 1 + static_cast<int>(d);
    w.p = scores_[d];
    w.p.resize(E, 0.0f);
    w.tokens.resize(E);
    for (int e = 0; e < E; ++e)
      w.tokens[e] = static_cast<float>(
          std::clamp(share / std::max(1e-3f, w.p[e]), 1.0, static_cast<double>(std::max(1, route.num_tokens))));
    out.push_back(std::move(w));
  }
}

void PreScopePolicy::victims(const std::vector<ExpertId>& keep, std::vector<std::pair<ExpertId, double>>& out) {
  out.clear();
  for (ExpertId id : ctx_.cache->evictable())
    if (std::find(keep.begin(), keep.end(), id) == keep.end()) out.push_back({id, ctx_.cost.transfer_s * reuse(id)});
  std::sort(out.begin(), out.end(), [&](const auto& a, const auto& b) {
    if (a.second != b.second) return a.second < b.second;
    return std::pair(token_rate(a.first), recency_.last_use(a.first)) <
           std::pair(token_rate(b.first), recency_.last_use(b.first));
  });
}

void PreScopePolicy::on_dispatched(const RouteInfo& route) {
  std::vector<WindowLayer> window;
  predict_window(route, window);
  const double T = ctx_.cost.transfer_s;
  // Link backlog: what the last plan queued, less the device time since, plus this layer's misses.
  const double backlog =
      std::max(0.0, backlog_after_plan_s_ - plan_lead_s_ - ctx_.cost.device_layer_s) + misses_ * T;
  misses_ = 0;
  // Device time until the next layer starts: this layer's experts, device and host in parallel.
  const double lead = std::max(layer_device_s_, layer_host_s_);
  backlog_after_plan_s_ = backlog;
  plan_lead_s_ = lead;
  if (window.empty()) return;
  const double t0 = thread_cpu_s();
  PreSchedInstance inst;
  inst.transfer_s = T;
  inst.lead_s = lead;
  inst.link_free_s = backlog;
  std::vector<ExpertId> keep;
  window_p_.clear();
  for (const WindowLayer& w : window) {
    PreSchedLayer lay;
    lay.layer = w.layer;
    lay.dense_s = ctx_.cost.device_layer_s;
    std::vector<int> order;
    for (int e = 0; e < ctx_.num_experts; ++e)
      if (w.p[e] >= kMinProbability) order.push_back(e);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return w.p[a] > w.p[b]; });
    int missing = 0;
    for (int e : order) {
      const ExpertId id{w.layer, e};
      const bool resident = ctx_.cache->contains(id);
      if (!resident && missing == kMaxCandidates) continue;
      missing += !resident;
      keep.push_back(id);
      window_p_[id.key()] = std::max(window_p_[id.key()], w.p[e]);
      lay.candidates.push_back({e, w.p[e], ctx_.cost.device_expert_s,
                                ctx_.cost.host_expert_s(static_cast<int>(w.tokens[e] + 0.5f)), resident});
    }
    inst.layers.push_back(std::move(lay));
  }
  std::vector<std::pair<ExpertId, double>> vict;
  victims(keep, vict);
  for (const auto& v : vict) inst.evict_cost_s.push_back(v.second);
  inst.free_slots = static_cast<int>(ctx_.cache->free_slots());
  const PreSchedPlan plan = presched_solve(inst);
  timing_.solve_s += thread_cpu_s() - t0;
  ++timing_.plans;
  timing_.states += plan.states;
  // Issue the prefetches in layer order (the planner's link order), most probable first.
  std::size_t next_victim = 0;
  int issued = 0;
  for (std::size_t j = 0; j < inst.layers.size(); ++j) {
    for (std::size_t i = 0; i < inst.layers[j].candidates.size(); ++i) {
      if (plan.action[j][i] != PreSchedAction::kPrefetch) continue;
      const ExpertId id{inst.layers[j].layer, inst.layers[j].candidates[i].expert};
      if (ctx_.cache->contains(id)) continue;
      while (ctx_.cache->free_slots() == 0 && next_victim < vict.size()) ctx_.cache->evict(vict[next_victim++].first);
      if (ctx_.cache->free_slots() == 0) break;
      if (ctx_.cache->prefetch(id, kPriorityPrefetch + static_cast<int>(j))) ++issued;
    }
  }
  timing_.prefetches += issued;
  backlog_after_plan_s_ = backlog + issued * T;
}

ExpertId PreScopePolicy::choose_victim(std::span<const ExpertId> candidates, ExpertId) {
  auto key = [&](ExpertId id) {
    auto it = window_p_.find(id.key());
    return std::tuple(it == window_p_.end() ? 0.0f : it->second, token_rate(id), recency_.last_use(id));
  };
  return *std::min_element(candidates.begin(), candidates.end(), [&](ExpertId a, ExpertId b) { return key(a) < key(b); });
}

std::unique_ptr<Policy> make_prescope_policy(const PolicyOptions& options) {
  return std::make_unique<PreScopePolicy>(options);
}

}  // namespace ferry::moe
