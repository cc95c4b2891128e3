// The policy registry (policy.h): each builtin policy's entry, with its spec keys and capabilities.
#include <charconv>
#include <initializer_list>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/registry.h"
#include "core/registry_names.h"
#include "moe/predict/predictor_registry.h"
#include "moe/sched/policy.h"
#include "moe/trace/future_routing.h"

namespace ferry::moe {

std::unique_ptr<Policy> make_ondemand_policy(const PolicyOptions&);
std::unique_ptr<Policy> make_lru_policy(const PolicyOptions&);
std::unique_ptr<Policy> make_static_hot_policy(const PolicyOptions&);
std::unique_ptr<Policy> make_next_gate_policy(const PolicyOptions&);
std::unique_ptr<Policy> make_fiddler_policy(const PolicyOptions&);
std::unique_ptr<Policy> make_moe_infinity_policy(const PolicyOptions&);
std::unique_ptr<Policy> make_prescope_policy(const PolicyOptions&);
std::unique_ptr<Policy> make_oracle_policy(const PolicyOptions&);
std::unique_ptr<Policy> make_perfect_prediction_policy(const PolicyOptions&);

namespace {

Registry<PolicyEntry>& registry() {
  static Registry<PolicyEntry> r("policy");
  return r;
}

// The spec keys, one reader per PolicyOptions field.
void read_scope(SpecReader& s, PolicyOptions& o) {
  o.lru_scope = s.get_choice("scope", o.lru_scope, {"global", "layer"});
}

// PreScopePolicy checks the same range for a window the caller sets. window=auto (or 0): the
// layers one transfer lasts, from the link/compute ratio.
void read_window(SpecReader& s, PolicyOptions& o) {
  const std::string v = s.get_string("window", o.window == 0 ? "auto" : std::to_string(o.window));
  if (v == "auto") {
    o.window = 0;
    return;
  }
  int w = -1;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), w);
  FERRY_REQUIRE(ec == std::errc() && end == v.data() + v.size() && w >= 1 && w <= 8, "policy '", s.name(),
                "': window=", v, ": expected 1 to 8 layers, or auto");
  o.window = w;
}

// Idle-link speculation: speculate=0 turns it off; horizon=N layers (0: the policy's default).
void read_speculation(SpecReader& s, PolicyOptions& o) {
  o.speculate = s.get_bool("speculate", o.speculate);
  const std::int64_t h = s.get_int("horizon", o.horizon);
  FERRY_REQUIRE(h >= 0 && h <= 1024, "policy '", s.name(), "': horizon=", h, ": expected 0 (auto) to 1024 layers");
  o.horizon = static_cast<int>(h);
}

// predictor=SPEC: the predictor is built when the policy is attached (it needs the model's shape);
// its name is checked now.
void read_predictor(SpecReader& s, PolicyOptions& o) {
  const std::string spec = s.get_string("predictor", "");
  if (spec.empty()) return;
  predictor_entry(spec);  // an unknown predictor fails here, before any run
  o.predictor = [spec](const PolicyContext& ctx) {
    return make_predictor(spec, PredictorContext{ctx.routers, ctx.num_layers, ctx.num_experts, ctx.top_k});
  };
}

using KeyReader = void (*)(SpecReader&, PolicyOptions&);

// A factory that applies `keys` to a copy of the options and builds with `make`.
std::function<std::unique_ptr<Policy>(SpecReader&, const PolicyOptions&)> with_keys(
    std::initializer_list<KeyReader> keys, PolicyFactory make) {
  std::vector<KeyReader> k(keys);
  return [k, make](SpecReader& spec, const PolicyOptions& options) {
    PolicyOptions o = options;
    for (KeyReader read : k) read(spec, o);
    spec.finish();
    if (o.wrap_predictor) {  // after the keys, so that a predictor= of the spec is wrapped too
      o.predictor = [inner = o.predictor, wrap = o.wrap_predictor](const PolicyContext& ctx) {
        std::unique_ptr<Predictor> p =
            inner ? inner(ctx) : (ctx.routers ? make_next_gate_predictor(ctx.routers) : nullptr);
        return p ? wrap(std::move(p)) : nullptr;
      };
      o.wrap_predictor = nullptr;
    }
    return make(o);
  };
}

void read_lookahead(SpecReader& s, PolicyOptions& o) {
  const std::int64_t k = s.get_int("lookahead", o.lookahead);
  if (s.has("lookahead"))
    FERRY_REQUIRE(k >= 1 && k <= 64, "policy '", s.name(), "': lookahead=", k, ": expected 1 to 64 layers");
  o.lookahead = static_cast<int>(k);
}

}  // namespace

void register_policy(PolicyEntry entry) {
  FERRY_CHECK(entry.make != nullptr, "policy '", entry.name, "' has no factory");
  registry().add(std::move(entry));
}

void register_policy(const std::string& name, PolicyFactory factory) {
  register_policy(PolicyEntry{.name = name, .summary = "", .make = with_keys({}, std::move(factory))});
}

void register_builtin_policies() {
  auto& r = registry();
  r.add_if_absent({.name = "ondemand", .summary = "load each missed expert when it is needed; no cache policy",
                   .make = with_keys({}, make_ondemand_policy)});
  r.add_if_absent({.name = "lru", .summary = "least-recently-used expert cache (scope=global|layer)",
                   .make = with_keys({read_scope}, make_lru_policy)});
  r.add_if_absent({.name = "static-hot", .summary = "the calibration's most routed experts stay resident",
                   .uses_counts = true, .make = with_keys({}, make_static_hot_policy)});
  r.add_if_absent({.name = "next-gate", .summary = "prefetch what the next layers' gates predict (scope, lookahead)",
                   .needs_routers = true, .make = with_keys({read_scope, read_lookahead}, make_next_gate_policy)});
  r.add_if_absent({.name = "fiddler", .summary = "hot experts resident, misses run on the host (Fiddler)",
                   .uses_counts = true, .make = with_keys({}, make_fiddler_policy)});
  r.add_if_absent({.name = "moe-infinity", .summary = "activation-matrix prefetch (MoE-Infinity)",
                   .uses_counts = true, .make = with_keys({}, make_moe_infinity_policy)});
  r.add_if_absent({.name = "prescope", .summary = "PreScope: predictor + cross-layer PreSched plan (window, predictor)",
                   .positional_key = "predictor", .takes_predictor = true,
                   .uses_counts = true, .make = with_keys({read_window, read_speculation, read_predictor}, make_prescope_policy)});
  r.add_if_absent({.name = "prescope-perfect",
                   .summary = "PreScope with the recorded future as its predictor: the prediction/planning split",
                   .needs_future = true,
                   .uses_counts = true, .make = with_keys({read_window, read_speculation}, make_perfect_prediction_policy)});
  r.add_if_absent({.name = "oracle", .summary = "the recorded future with PreSched and Belady eviction: the bound",
                   .needs_future = true, .is_bound = true,
                   .make = with_keys({read_window, read_speculation}, make_oracle_policy)});
}

std::unique_ptr<Policy> make_policy(const std::string& spec, const PolicyOptions& options) {
  register_builtin_policies();
  auto [entry, reader] = registry().parse(spec);
  std::unique_ptr<Policy> policy = entry->make(reader, options);
  reader.finish();
  return policy;
}

void check_policy_spec(const std::string& spec) {
  const FutureRouting none{};
  PolicyOptions options;
  options.future = &none;
  make_policy(spec, options);
}

const PolicyEntry& policy_entry(const std::string& spec) {
  register_builtin_policies();
  return registry().at(Spec::name_of(spec));
}

const PolicyEntry* find_policy(const std::string& name) {
  register_builtin_policies();
  return registry().find(name);
}

std::vector<std::string> policy_names() {
  register_builtin_policies();
  return registry().names();
}

std::vector<std::string> trace_policy_names() {
  register_builtin_policies();
  return names_where(registry(), [](const auto& e) { return !e.needs_routers; });
}

std::string policy_label(const std::string& spec) {
  const Spec s = Spec::parse(spec, "policy", policy_entry(spec).positional_key);
  if (s.params.size() == 1 && s.params[0].first == "predictor") return s.name + "+" + Spec::name_of(s.params[0].second);
  return spec;
}

}  // namespace ferry::moe
