// Two policies that read the recorded future, so they run only where it exists (the simulator,
// the trace replay):
// - oracle: PreScope's scheduler, speculation and eviction (prescope_policy.h) fed the true
//   routing of the next two tokens with its exact token counts. With probabilities 0 or 1 the
//   eviction rule (expected loss, then the farthest use) is Belady's (1966), weighted by the miss
//   cost; it starts with the experts the future routes most. The bound every policy is measured against.
// - prescope-perfect: PreScope with the true routing as its predictor (OraclePredictor, 0/1 rows
//   over the same two tokens) but its own estimates of everything else (token counts from the
//   routing shares, the calibration's start): what PreScope would reach with a perfect predictor.
//   Its distance to prescope is the prediction's share of the gap to the oracle, its distance to
//   the oracle the planning's (ferry moe simulate prints both).
#include <algorithm>

#include "core/error.h"
#include "moe/sched/builtin_policies.h"
#include "moe/sched/oracle_predictor.h"
#include "moe/sched/prescope_policy.h"
#include "moe/trace/future_routing.h"

namespace ferry::moe {
namespace {

const FutureRouting* require_future(const PolicyInputs& inputs, const std::string& name) {
  FERRY_REQUIRE(inputs.future != nullptr, "policy '", name,
                "' needs the recorded routing to come: it runs in the simulator (ferry moe simulate) and in ferry moe "
                "bench on a trace's routing (--routing)");
  return inputs.future;
}

// The routing counts of the recorded future, [layer * E + e]: the oracle's start.
std::vector<std::uint64_t> future_counts(const FutureRouting& f) {
  std::vector<std::uint64_t> counts(static_cast<std::size_t>(f.num_layers) * f.num_experts, 0);
  for (std::int64_t pos = 0; pos < f.positions(); ++pos)
    for (int e : f.at(pos).experts) ++counts[static_cast<std::size_t>(pos % f.num_layers) * f.num_experts + e];
  return counts;
}

void require_shape(const FutureRouting& f, const PolicyContext& ctx, const char* name) {
  FERRY_REQUIRE(f.num_layers == ctx.num_layers && f.num_experts <= ctx.num_experts, name,
                ": the recorded routing has ", f.num_layers, " layers x ", f.num_experts, " experts, the model ",
                ctx.num_layers, " x ", ctx.num_experts);
}

class OraclePolicy : public PreScopePolicy {
 public:
  // Its predictor is the recorded future; it starts with the experts that future routes most.
  OraclePolicy(const PreScopeOptions& options, const PolicyInputs&, const FutureRouting* future)
      : PreScopePolicy(options, future_counts(*future), nullptr), future_(future) {}
  std::string name() const override { return "oracle"; }

  void attach(const PolicyContext& ctx) override {
    PreScopePolicy::attach(ctx);
    require_shape(*future_, ctx, "oracle");
    predictor_ = std::make_unique<OraclePredictor>(future_, true);  // observes the position
  }

 protected:
  int default_horizon() const override { return 2 * ctx_.num_layers; }
  bool exact_future() const override { return true; }
  std::int64_t use_past_rows(ExpertId id) const override { return future_->next_use(id, position()); }

  // The recorded routing of the next `depth` layers, across steps, with its token counts.
  void predict_window(const RouteInfo&, int depth, std::vector<WindowLayer>& out) override {
    out.clear();
    const std::int64_t now = position();
    for (int d = 1; d <= depth && now + d < future_->positions(); ++d) {
      WindowLayer w;
      w.layer = static_cast<int>((now + d) % future_->num_layers);
      w.position = now + d;
      w.p.assign(ctx_.num_experts, 0.0f);
      w.tokens.assign(ctx_.num_experts, 0.0f);
      const LayerRoute& r = future_->at(now + d);
      for (std::size_t i = 0; i < r.experts.size(); ++i) {
        w.p[r.experts[i]] = 1.0f;
        w.tokens[r.experts[i]] = static_cast<float>(r.tokens[i]);
      }
      out.push_back(std::move(w));
    }
  }

 private:
  const FutureRouting* future_;  // owned by the caller, outlives the policy (PolicyInputs::future)
};

class PerfectPredictionPolicy : public PreScopePolicy {
 public:
  // The caller's calibration counts, the recorded future as its predictor.
  PerfectPredictionPolicy(const PreScopeOptions& options, const PolicyInputs& inputs, const FutureRouting* future)
      : PreScopePolicy(options, inputs.expert_counts,
                       [future](const PolicyContext&) { return std::make_unique<OraclePredictor>(future, true); }),
        future_(future) {}
  std::string name() const override { return "prescope-perfect"; }
  void attach(const PolicyContext& ctx) override {
    PreScopePolicy::attach(ctx);
    require_shape(*future_, ctx, "prescope-perfect");
  }

 protected:
  int default_horizon() const override { return 2 * ctx_.num_layers; }
  bool exact_future() const override { return true; }

 private:
  const FutureRouting* future_;  // as above
};

// The entry of a policy of this file: `entry`'s name, summary and capabilities, PreScope's keys
// but predictor (its predictor is the recorded future), and a factory that reads them, refuses an
// unknown key before a missing future, and builds PolicyType(options, inputs, future).
template <class PolicyType>
PolicyEntry future_policy_entry(PolicyEntry entry) {
  entry.keys = prescope_keys(/*predictor_key=*/false);
  entry.needs_future = true;
  entry.make = [name = entry.name](SpecReader& spec, const PolicyInputs& inputs) -> std::unique_ptr<Policy> {
    const PreScopeOptions o = parse_prescope_options(spec, /*predictor_key=*/false);
    spec.finish();
    return std::make_unique<PolicyType>(o, inputs, require_future(inputs, name));
  };
  return entry;
}

}  // namespace

PolicyEntry oracle_policy_entry() {
  return future_policy_entry<OraclePolicy>(
      {.name = "oracle",
       .summary = "the recorded future with PreSched and Belady eviction: the bound",
       .is_bound = true});
}

PolicyEntry prescope_perfect_policy_entry() {
  return future_policy_entry<PerfectPredictionPolicy>(
      {.name = "prescope-perfect",
       .summary = "PreScope with the recorded future as its predictor: the prediction/planning split",
       .uses_counts = true});
}

}  // namespace ferry::moe
