// PreScope (prefetch-aware scheduling for MoE offloading): at every layer a predictor gives the
// activation probabilities of the layers ahead; PreSched (presched.h) turns the next D of them,
// with the cache contents, the link and compute times and the room left, into one plan for the
// window: which experts to prefetch (queued on the AsyncIO thread in layer order, priority 100 +
// distance, so that demand loads overtake them and pre-empt them between chunks), which to leave
// for on-demand loading and which to run on the host. When a layer's routing is known, the same
// scheduler decides host or device for its missing experts with the exact token counts. Past the
// window, idle-link speculation (docs/moe.md) fills a link that would otherwise idle: one
// prefetch at a time of the expert with the largest expected saving p x miss cost that can still
// arrive in time, if that exceeds the expected loss of the expert it evicts (its probability of
// use within the window, not below its share of a step, x its miss cost), scaled by how its
// earlier swaps paid off. Victims, for the plan, for speculation and for demand loads, leave by
// that expected loss, then the farthest predicted use, the least routed, the least recently used;
// with the recorded future (oracle) the loss is Belady's. The horizon reaches past the current
// token: predictors that see past it give the next tokens' rows, for the others PreScope's own
// cross-token table (cooccurrence_predictor.h) does. Given calibration counts, the most routed
// experts fill the device at the start (as static-hot and Fiddler start).
#include "moe/sched/prescope_policy.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <ctime>
#include <optional>
#include <tuple>
#include <unordered_map>

#include "core/error.h"
#include "moe/predict/predictor_registry.h"
#include "moe/sched/builtin_policies.h"
#include "moe/sched/prefetch_room.h"

namespace ferry::moe {
namespace {

constexpr float kMinProbability = 0.05f;  // predictions below are not worth a slot
constexpr int kMaxCandidates = 2;          // non-resident candidates per layer given to the planner
constexpr double kPriorTokens = 64;        // weight of the calibration prior in the routing shares
constexpr double kSpeculationMargin = 0.05;  // a speculative swap must gain this share of a miss (no churn on ties)
constexpr int kMaxSpeculative = 4;           // speculative prefetches per layer at most

// CPU time of this thread: the planner's own cost, whatever else the machine runs.
double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

std::size_t slot(const PolicyContext& ctx, ExpertId id) {
  return static_cast<std::size_t>(id.layer) * ctx.num_experts + id.expert;
}

// The predictor prescope ends up with: its spec's, else the caller's, else (empty) next-gate on the
// model's routers; wrapped as the caller asks.
PredictorFactory prescope_predictor(const std::string& spec, const PolicyInputs& inputs) {
  PredictorFactory make = inputs.predictor;
  if (!spec.empty())
    make = [spec](const PolicyContext& ctx) {
      return make_predictor(spec, PredictorContext{ctx.routers, ctx.num_layers, ctx.num_experts, ctx.top_k});
    };
  if (!inputs.wrap_predictor) return make;
  return [make, wrap = inputs.wrap_predictor](const PolicyContext& ctx) {
    std::unique_ptr<Predictor> p = make ? make(ctx) : (ctx.routers ? make_next_gate_predictor(ctx.routers) : nullptr);
    return p ? wrap(std::move(p)) : nullptr;
  };
}

}  // namespace

PreScopeOptions parse_prescope_options(SpecReader& spec, bool predictor_key) {
  PreScopeOptions o;
  // window=auto (or 0): the layers one transfer lasts, from the link/compute ratio.
  const std::string w = spec.get_string("window", std::to_string(o.window));
  if (w == "auto") {
    o.window = 0;
  } else {
    const auto [end, ec] = std::from_chars(w.data(), w.data() + w.size(), o.window);
    FERRY_REQUIRE(ec == std::errc() && end == w.data() + w.size() && o.window >= 1 && o.window <= 8, "policy '",
                  spec.name(), "': window=", w, ": expected 1 to 8 layers, or auto");
  }
  o.speculate = spec.get_bool("speculate", o.speculate);
  const std::int64_t h = spec.get_int("horizon", o.horizon);
  FERRY_REQUIRE(h >= 0 && h <= 1024, "policy '", spec.name(), "': horizon=", h, ": expected 0 (auto) to 1024 layers");
  o.horizon = static_cast<int>(h);
  if (predictor_key) {
    o.predictor = spec.get_string("predictor", "");
    if (!o.predictor.empty()) predictor_entry(o.predictor);  // an unknown predictor fails here, before any run
  }
  return o;
}

std::vector<PolicyKey> prescope_keys(bool predictor_key) {
  std::vector<PolicyKey> keys = {{"window", "1..8/auto"}, {"speculate", "0/1"}, {"horizon", "0..1024"}};
  if (predictor_key) keys.push_back({"predictor", "SPEC"});
  return keys;
}

PreScopePolicy::PreScopePolicy(PreScopeOptions options, std::vector<std::uint64_t> expert_counts,
                               PredictorFactory predictor)
    : options_(std::move(options)), expert_counts_(std::move(expert_counts)), predictor_factory_(std::move(predictor)) {
  FERRY_REQUIRE(options_.window >= 0 && options_.window <= 8, "PreSched window of ", options_.window,
                " layers: expected 1 to 8 (0: auto)");
  FERRY_REQUIRE(options_.horizon >= 0, "speculation horizon of ", options_.horizon, " layers: expected >= 0 (0: auto)");
}

void PreScopePolicy::attach(const PolicyContext& ctx) {
  ctx_ = ctx;
  recency_.set_shape(ctx.num_layers, ctx.num_experts);
  if (predictor_factory_)
    predictor_ = predictor_factory_(ctx);
  else
    predictor_ = ctx.routers ? make_next_gate_predictor(ctx.routers) : nullptr;
  activations_.assign(static_cast<std::size_t>(ctx.num_layers) * ctx.num_experts, 0);
  cross_ = ctx.num_layers > 0 && ctx.num_experts > 0 && ctx.top_k > 0
               ? std::make_unique<CooccurrencePredictor>(ctx.num_layers, ctx.num_experts, ctx.top_k)
               : nullptr;
  const std::size_t n_slots = static_cast<std::size_t>(ctx.num_layers) * ctx.num_experts;
  view_.p.assign(n_slots, 0.0f);
  view_.rate.assign(n_slots, 0.0f);
  view_.at.assign(n_slots, kNoUse);
  view_.tokens.assign(n_slots, 1.0f);
  position_ = -1;
  layer_s_ = 0;
  steps_ = 0;
  backlog_after_plan_s_ = plan_lead_s_ = 0;
  spec_used_ = spec_expected_ = spec_victim_misses_ = 0;
  spec_brought_.clear();
  spec_victims_.clear();
  misses_ = 0;
  prior_.clear();
  tokens_seen_ = 0;
  batch_ = 1;
  const std::size_t n = static_cast<std::size_t>(ctx.num_layers) * ctx.num_experts;
  if (expert_counts_.size() == n && ctx.num_layers > 0) {
    std::uint64_t tokens = 0;  // calibration tokens: the routings of layer 0 over top_k
    for (int e = 0; e < ctx.num_experts; ++e) tokens += expert_counts_[e];
    if (tokens > 0) {
      prior_.resize(n);
      for (std::size_t k = 0; k < n; ++k)
        prior_[k] = static_cast<double>(expert_counts_[k]) / (static_cast<double>(tokens) / std::max(1, ctx.top_k));
    }
  }
  // Start as the static placements do: the most routed experts of the calibration fill the device.
  if (!expert_counts_.empty()) prefetch_hottest(ctx, expert_counts_, ctx.cache->capacity_slots());
}

// Share of tokens routed to `id`: what was seen, with the calibration (or top_k / E) as a prior
// worth kPriorTokens tokens.
double PreScopePolicy::token_rate(ExpertId id) const {
  const std::size_t k = slot(ctx_, id);
  const double prior = k < prior_.size() ? prior_[k] : static_cast<double>(ctx_.top_k) / std::max(1, ctx_.num_experts);
  return (static_cast<double>(activations_[k]) + kPriorTokens * prior) / (static_cast<double>(tokens_seen_) + kPriorTokens);
}

double PreScopePolicy::reuse(ExpertId id) const { return 1.0 - std::exp(-token_rate(id) * batch_); }

double PreScopePolicy::miss_saving(int tokens) const {
  const CostModel& c = ctx_.cost;
  return std::min(c.host_expert_s(std::max(1, tokens)), c.transfer_s + c.device_expert_s) - c.device_expert_s;
}

int PreScopePolicy::miss_tokens(ExpertId id) const {
  const std::size_t k = slot(ctx_, id);
  if (exact_future()) return static_cast<int>(view_.tokens[k] + 0.5f);
  // Predicted: what a step routes to it when it is used (its token share x batch / P(used)), at
  // least what the rows predicted.
  const double r = reuse(id);
  const double n = r > 0 ? batch_ * token_rate(id) / r : 1.0;
  return std::clamp(static_cast<int>(std::max<double>(n, view_.tokens[k]) + 0.5), 1, std::max(1, batch_));
}

int PreScopePolicy::transfer_layers() const {
  return layer_s_ > 0 ? static_cast<int>(std::ceil(ctx_.cost.transfer_s / layer_s_)) : 0;
}

int PreScopePolicy::default_horizon() const {
  return std::min(2 * ctx_.num_layers, ctx_.num_layers + transfer_layers());
}

int PreScopePolicy::window_layers() const {
  if (options_.window > 0) return options_.window;
  if (layer_s_ <= 0) return 3;
  return std::clamp(transfer_layers(), 1, 8);
}

PreScopePolicy::VictimKey PreScopePolicy::victim_key(ExpertId id) const {
  const std::size_t k = slot(ctx_, id);
  // Exact future: Belady's order, weighted by the miss (the sooner the use, the larger the loss).
  // Predicted: the chance of a use within the horizon, not below the long-run share of a step.
  const double worth = exact_future() ? view_.rate[k] : std::max<double>(view_.p[k], reuse(id));
  return {worth * miss_saving(miss_tokens(id)), -view_.at[k], token_rate(id), recency_.last_use(id)};
}

void PreScopePolicy::on_route(const RouteInfo& route, std::span<Placement> placement) {
  if (predictor_) predictor_->observe(route.layer, route.experts, {});
  if (cross_) cross_->observe(route.layer, route.experts, {});
  position_ = static_cast<std::int64_t>(steps_) * ctx_.num_layers + route.layer;
  // What speculation's swaps did, use by use: a use of an expert it brought (while it stays) is a
  // hit it made, a use of one it evicted (until it is back) a miss it caused.
  for (int e : route.experts) {
    const ExpertId id{route.layer, e};
    const bool here = ctx_.cache->contains(id);
    if (spec_brought_.count(id.key())) {
      if (here) spec_used_ += 1;
      else spec_brought_.erase(id.key());
    }
    if (spec_victims_.count(id.key())) {
      if (here) spec_victims_.erase(id.key());
      else spec_victim_misses_ += 1;
    }
  }
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

void PreScopePolicy::predict_window(const RouteInfo& route, int depth, std::vector<WindowLayer>& out) {
  out.clear();
  if (!predictor_) return;
  PredictInput in{route.layer, route.hidden, route.num_tokens, route.hidden_size, route.experts};
  predictor_->predict(in, depth, scores_);
  if (static_cast<int>(scores_.size()) < depth && cross_ && !predictor_->sees_past_token()) {  // the next token's rows
    cross_->predict(in, depth, cross_scores_);
    for (std::size_t d = scores_.size(); d < cross_scores_.size(); ++d) scores_.push_back(cross_scores_[d]);
  }
  const int E = ctx_.num_experts;
  // Tokens an expert gets if activated: the batch's share, given that it is activated.
  const double share = static_cast<double>(std::max(1, route.num_tokens)) * ctx_.top_k / std::max(1, E);
  for (std::size_t d = 0; d < scores_.size(); ++d) {
    WindowLayer w;
    w.layer = (route.layer + 1 + static_cast<int>(d)) % ctx_.num_layers;
    w.position = position_ + 1 + static_cast<std::int64_t>(d);
    w.p = scores_[d];
    w.p.resize(E, 0.0f);
    w.tokens.resize(E);
    for (int e = 0; e < E; ++e)
      w.tokens[e] = static_cast<float>(
          std::clamp(share / std::max(1e-3f, w.p[e]), 1.0, static_cast<double>(std::max(1, route.num_tokens))));
    out.push_back(std::move(w));
  }
}

// Probability of a use within the rows, the first likely use and its tokens; layers the rows do
// not reach keep the routing share of a step and their next occurrence.
void PreScopePolicy::build_view(std::span<const WindowLayer> rows) {
  const int L = ctx_.num_layers, E = ctx_.num_experts;
  std::vector<char> covered(L, 0);
  for (const WindowLayer& w : rows) covered[w.layer] = 1;
  for (int l = 0; l < L; ++l) {
    const std::int64_t next = position_ + 1 + ((l - position_ % L - 1) % L + L) % L;
    for (int e = 0; e < E; ++e) {
      const std::size_t k = slot(ctx_, {l, e});
      view_.p[k] = covered[l] ? 0.0f : static_cast<float>(reuse({l, e}));
      view_.rate[k] = view_.p[k] / static_cast<float>(next - position_);
      view_.at[k] = covered[l] ? kNoUse : next;
      view_.tokens[k] = 1.0f;
    }
  }
  for (const WindowLayer& w : rows)
    for (int e = 0; e < E; ++e) {
      const std::size_t k = slot(ctx_, {w.layer, e});
      const float p = std::clamp(w.p[e], 0.0f, 1.0f);
      view_.rate[k] += (1.0f - view_.p[k]) * p / static_cast<float>(w.position - position_);
      view_.p[k] = 1.0f - (1.0f - view_.p[k]) * (1.0f - p);
      if (view_.at[k] == kNoUse && w.p[e] >= 0.5f) view_.at[k] = w.position, view_.tokens[k] = w.tokens[e];
    }
  for (int l = 0; l < L; ++l)  // farthest first among those no row predicts: the oracle's Belady order
    if (covered[l])
      for (int e = 0; e < E; ++e) {
        const std::size_t k = slot(ctx_, {l, e});
        if (view_.at[k] == kNoUse) view_.at[k] = use_past_rows({l, e});
      }
}

void PreScopePolicy::victims(const std::vector<ExpertId>& keep, std::vector<std::pair<ExpertId, double>>& out) {
  out.clear();
  // By the plan's cost of an eviction (a miss, if it is used within the horizon), then the victim
  // order; each key computed once.
  std::vector<std::tuple<double, VictimKey, ExpertId>> keyed;
  for (ExpertId id : ctx_.cache->evictable()) {
    if (std::find(keep.begin(), keep.end(), id) != keep.end()) continue;
    const std::size_t k = slot(ctx_, id);
    const double p = exact_future() ? view_.p[k] : std::max<double>(view_.p[k], reuse(id));
    keyed.push_back({p * miss_saving(static_cast<int>(view_.tokens[k] + 0.5f)), victim_key(id), id});
  }
  std::sort(keyed.begin(), keyed.end());
  for (const auto& [cost, key, id] : keyed) out.push_back({id, cost});
}

void PreScopePolicy::on_dispatched(const RouteInfo& route) {
  const double T = ctx_.cost.transfer_s;
  // Link backlog: what was queued, less the device time since the last plan, plus this layer's misses.
  const double backlog =
      std::max(0.0, backlog_after_plan_s_ - plan_lead_s_ - ctx_.cost.device_layer_s) + misses_ * T;
  // Device time until the next layer starts: this layer's experts, device and host in parallel.
  const double lead = std::max(layer_device_s_, layer_host_s_);
  const double layer_s = ctx_.cost.device_layer_s + lead + misses_ * T;
  layer_s_ = layer_s_ <= 0 ? layer_s : 0.9 * layer_s_ + 0.1 * layer_s;
  misses_ = 0;
  backlog_after_plan_s_ = backlog;
  plan_lead_s_ = lead;
  const int D = window_layers();
  const int H = options_.speculate ? std::max(D, options_.horizon > 0 ? options_.horizon : default_horizon()) : D;
  std::vector<WindowLayer> rows;
  predict_window(route, H, rows);
  if (rows.empty()) return;
  const double t0 = thread_cpu_s();
  // Eviction weighs the plan's window and the long-run shares: measured, the weaker rows past the
  // window made victims worse (docs/moe.md); the recorded future is used whole.
  build_view(std::span<const WindowLayer>(rows).first(
      exact_future() ? rows.size() : std::min(rows.size(), static_cast<std::size_t>(D))));
  PreSchedInstance inst;
  inst.transfer_s = T;
  inst.lead_s = lead;
  inst.link_free_s = backlog;
  std::vector<ExpertId> keep;
  for (std::size_t j = 0; j < rows.size() && static_cast<int>(j) < D; ++j) {
    const WindowLayer& w = rows[j];
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
      // A layer the window reaches twice (a window longer than the model): plan its first visit.
      bool listed = false;
      for (const auto& c : lay.candidates) listed |= c.expert == e;
      if (listed) continue;
      missing += !resident;
      keep.push_back(id);
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
  ++timing_.plans;
  timing_.states += plan.states;
  // Issue the prefetches in layer order (the planner's link order), most probable first; room is
  // made by the plan's victims, in its order.
  std::vector<PrefetchWant> wants;
  for (std::size_t j = 0; j < inst.layers.size(); ++j)
    for (std::size_t i = 0; i < inst.layers[j].candidates.size(); ++i)
      if (plan.action[j][i] == PreSchedAction::kPrefetch)
        wants.push_back({{inst.layers[j].layer, inst.layers[j].candidates[i].expert},
                         kPriorityPrefetch + static_cast<int>(j)});
  std::unordered_map<std::uint32_t, std::size_t> rank;  // ExpertId::key -> place in the victims' order
  for (std::size_t v = 0; v < vict.size(); ++v) rank.emplace(vict[v].first.key(), v);
  const VictimRule rule{[&](ExpertId c, ExpertId) { return rank.count(c.key()) > 0; },
                        [&](std::span<const ExpertId> c, ExpertId) {
                          return *std::min_element(c.begin(), c.end(), [&](ExpertId a, ExpertId b) {
                            return rank.at(a.key()) < rank.at(b.key());
                          });
                        }};
  const std::size_t issued = prefetch_with_room(*ctx_.cache, wants, rule);
  timing_.prefetches += issued;
  backlog_after_plan_s_ = backlog + issued * T;
  speculate(rows, static_cast<int>(inst.layers.size()), lead, keep);
  timing_.solve_s += thread_cpu_s() - t0;
}

// Past the plan's window, while the link would idle before the next layer: the non-resident
// expert of largest expected saving p x miss that can arrive before its layer starts (lead + (d-1)
// layer times away), if that beats the expected loss of the expert it evicts by a margin.
void PreScopePolicy::speculate(const std::vector<WindowLayer>& rows, int window, double lead_s,
                               const std::vector<ExpertId>& keep) {
  if (!options_.speculate) return;
  const double T = ctx_.cost.transfer_s;
  const double layer_s = std::max(layer_s_, 1e-9);
  std::vector<ExpertId> taken;
  // What the speculative swaps so far were worth: (hits they made - misses they caused + 1) /
  // (predicted uses + 1), 1 before any, 0 once they cost more than they gave. A predictor whose
  // speculation is never used sees it fall to at most 1 / (n + 1) after n prefetches, and a swap
  // needs c p > kSpeculationMargin, so it gets at most ceil(1 / kSpeculationMargin) - 1 = 19
  // (docs/moe.md).
  const double calibration =
      exact_future() ? 1.0 : std::clamp((spec_used_ - spec_victim_misses_ + 1.0) / (spec_expected_ + 1.0), 0.0, 1.0);
  if (calibration <= kSpeculationMargin) return;  // no swap can pass: c p > margin is needed
  // When each row's layer starts: the lead, then per row its dense part and its experts, expected
  // from the row (resident ones on the device, the others at the cheaper of the host and a load;
  // device and host in parallel).
  const CostModel& c = ctx_.cost;
  std::vector<double> start(rows.size());
  double t = lead_s;
  for (std::size_t j = 0; j < rows.size(); ++j) {
    t += c.device_layer_s;
    start[j] = t;
    double dev = 0, host = 0;
    for (int e = 0; e < ctx_.num_experts; ++e) {
      const double p = rows[j].p[e];
      if (p <= 0) continue;
      const int tok = static_cast<int>(rows[j].tokens[e] + 0.5f);
      if (ctx_.cache->contains({rows[j].layer, e}))
        dev += p * c.device_expert_s;
      else if (c.host_expert_s(tok) <= T + c.device_expert_s)
        host += p * c.host_expert_s(tok);
      else
        dev += p * (T + c.device_expert_s);
    }
    t += std::max(dev, host);
  }
  // A swap's victim: the lowest victim key outside the plan's window.
  const VictimRule outside_window{
      [&keep](ExpertId id, ExpertId) { return std::find(keep.begin(), keep.end(), id) == keep.end(); },
      [this](std::span<const ExpertId> ids, ExpertId incoming) { return choose_victim(ids, incoming); }};
  for (int n = 0; n < kMaxSpeculative && backlog_after_plan_s_ <= std::max(layer_s, 0.5 * T); ++n) {
    const double arrive = backlog_after_plan_s_ + T;
    double best = 0, cand_miss = 0;
    ExpertId cand{-1, -1};
    int cand_d = 0;
    for (std::size_t j = static_cast<std::size_t>(window); j < rows.size(); ++j) {
      const WindowLayer& w = rows[j];
      if (start[j] < arrive) continue;  // would arrive after its layer starts
      for (int e = 0; e < ctx_.num_experts; ++e) {
        const ExpertId id{w.layer, e};
        if (w.p[e] < kMinProbability || ctx_.cache->contains(id)) continue;
        if (std::find(taken.begin(), taken.end(), id) != taken.end()) continue;
        const double miss = miss_saving(static_cast<int>(w.tokens[e] + 0.5f));
        const double gain = calibration * w.p[e] * miss / static_cast<double>(j + 1);  // per layer until its use
        if (gain > best) best = gain, cand_miss = miss, cand = id, cand_d = static_cast<int>(j) + 1;
      }
    }
    if (cand.layer < 0) return;
    taken.push_back(cand);
    if (ctx_.cache->free_slots() == 0) {
      const std::optional<ExpertId> found = find_victim(*ctx_.cache, outside_window, cand);
      if (!found) return;
      const ExpertId victim = *found;
      const VictimKey victim_k = victim_key(victim);
      // The candidate's saving against the victim's loss: with the exact future, over the cand_d
      // layers until the candidate's use (Belady: a victim used later can come back in time).
      const double saving = best * cand_d;
      const double loss = std::get<0>(victim_k) * (exact_future() ? cand_d : 1);
      if (saving - loss <= kSpeculationMargin * cand_miss) continue;  // not worth it: try the next candidate
      ctx_.cache->evict(victim);
      spec_victims_.insert(victim.key());
      spec_brought_.erase(victim.key());
    }
    if (!ctx_.cache->prefetch(cand, kPriorityPrefetch + cand_d)) return;
    spec_expected_ += std::min(1.0f, rows[cand_d - 1].p[cand.expert]);
    spec_brought_.insert(cand.key());
    spec_victims_.erase(cand.key());
    ++timing_.prefetches;
    backlog_after_plan_s_ += T;
  }
}

ExpertId PreScopePolicy::choose_victim(std::span<const ExpertId> candidates, ExpertId) {
  ExpertId best = candidates.front();
  VictimKey best_k = victim_key(best);
  for (ExpertId id : candidates.subspan(1))
    if (const VictimKey k = victim_key(id); k < best_k) best = id, best_k = k;
  return best;
}

PolicyEntry prescope_policy_entry() {
  return {.name = "prescope",
          .summary = "PreScope: predictor + cross-layer PreSched plan",
          .keys = prescope_keys(/*predictor_key=*/true),
          .positional_key = "predictor",
          .takes_predictor = true,
          .uses_counts = true,
          .make = [](SpecReader& spec, const PolicyInputs& inputs) -> std::unique_ptr<Policy> {
            PreScopeOptions o = parse_prescope_options(spec, /*predictor_key=*/true);
            PredictorFactory predictor = prescope_predictor(o.predictor, inputs);
            return std::make_unique<PreScopePolicy>(std::move(o), inputs.expert_counts, std::move(predictor));
          }};
}

}  // namespace ferry::moe
