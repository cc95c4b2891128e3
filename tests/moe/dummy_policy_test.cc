// The recipe of docs/architecture.md ("a new policy or predictor is one file plus one
// registration line"), followed by a test-only policy and a test-only predictor: once registered
// they are listed, built by spec, used by the simulator, and unknown keys in their specs are
// refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>

#include "core/error.h"
#include "moe/predict/predictor_registry.h"
#include "moe/sched/lru_policy.h"
#include "moe/sched/policy.h"
#include "moe/sim/simulate.h"
#include "moe/sim/simulator.h"
#include "random_trace.h"
#include "sim_test_util.h"

namespace ferry::moe {
namespace {

std::atomic<int> g_predictions{0};

// The predictor's "one file": expert `expert` at every later layer, with certainty.
class ConstantPredictor final : public Predictor {
 public:
  ConstantPredictor(const PredictorContext& ctx, int expert) : ctx_(ctx), expert_(expert) {}
  std::string name() const override { return "test-constant"; }
  void predict(const PredictInput& in, int lookahead, std::vector<std::vector<float>>& out) override {
    ++g_predictions;
    out.assign(std::max(0, std::min(lookahead, ctx_.num_layers - 1 - in.layer)),
               std::vector<float>(ctx_.num_experts, 0.0f));
    for (auto& layer : out) layer[expert_] = 1.0f;
  }

 private:
  PredictorContext ctx_;
  int expert_;
};

// The policy's "one file": LRU until `limit` layers were routed, then every expert on the host.
class HostAfterPolicy final : public LruPolicy {
 public:
  HostAfterPolicy(const PolicyInputs&, std::int64_t limit) : limit_(limit) {}
  std::string name() const override { return "test-host-after"; }
  void on_route(const RouteInfo& route, std::span<Placement> placement) override {
    LruPolicy::on_route(route, placement);
    if (routes_++ >= limit_) std::fill(placement.begin(), placement.end(), Placement::kHost);
  }

 private:
  std::int64_t limit_;
  std::int64_t routes_ = 0;
};

// The "one registration line" of each (once per process: a second add is an InvalidArgument).
void register_dummies() {
  static const bool once = [] {
    register_predictor({.name = "test-constant", .summary = "test only: one expert, always",
                        .make = [](SpecReader& s, const PredictorContext& ctx) -> std::unique_ptr<Predictor> {
                          const std::int64_t e = s.get_int("expert", 0);
                          FERRY_REQUIRE(e >= 0 && e < ctx.num_experts, "predictor 'test-constant': expert=", e,
                                        " out of range");
                          return std::make_unique<ConstantPredictor>(ctx, static_cast<int>(e));
                        }});
    register_policy({.name = "test-host-after", .summary = "test only: LRU, then everything on the host",
                     .make = [](SpecReader& s, const PolicyInputs& o) -> std::unique_ptr<Policy> {
                       const std::int64_t limit = s.get_int("limit", 1'000'000);
                       return std::make_unique<HostAfterPolicy>(o, limit);
                     }});
    return true;
  }();
  (void)once;
}

using testing::a100;

SimResult run(const std::string& spec) {
  const RoutingTrace t = testing::random_trace(5, 32, 8, 2, 12, 2);
  const FutureRouting f = form_batches(t, 1);
  TimeModel tm(a100(), model_shape("mixtral-8x7b"), 512);
  SimOptions so;
  so.capacity_experts = 24;
  PolicyInputs o;
  o.future = &f;
  auto p = make_policy(spec, o);
  return simulate(f, *p, tm, so);
}

TEST(DummyPolicy, IsListedBuiltBySpecAndUsedByTheSimulator) {
  register_dummies();
  const auto names = policy_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "test-host-after"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "prescope"), names.end());
  EXPECT_EQ(run("test-host-after").host_execs, 0u);       // the default limit: LRU throughout
  const SimResult all_host = run("test-host-after:limit=0");  // the key reaches the policy
  EXPECT_GT(all_host.host_execs, 0u);
  EXPECT_EQ(all_host.host_execs, all_host.accesses);
  EXPECT_EQ(all_host.loads, 0u);
}

TEST(DummyPolicy, UnknownKeysAndBadValuesAreRefused) {
  register_dummies();
  try {
    make_policy("test-host-after:limt=3");
    ADD_FAILURE() << "unknown key accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("policy 'test-host-after': unknown option 'limt' (known: limit)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(make_policy("test-host-after:limit=many"), InvalidArgument);
  EXPECT_THROW(make_policy("lru:scope=row"), InvalidArgument);
  EXPECT_THROW(make_policy("lru:window=2"), InvalidArgument);      // a key of another policy
  EXPECT_THROW(make_policy("prescope:window=9"), InvalidArgument);  // the key reaches PreSched's range check
  EXPECT_THROW(make_policy("next-gate:lookahead=0"), InvalidArgument);
  EXPECT_NE(make_policy("lru:scope=layer"), nullptr);
  EXPECT_NE(make_policy("prescope:window=2"), nullptr);
  EXPECT_THROW(make_policy("no-such-policy"), InvalidArgument);
  EXPECT_THROW(register_policy("lru", [](const PolicyInputs& o) { return make_policy("lru", o); }),
               InvalidArgument);
}

TEST(DummyPredictor, IsListedBuiltBySpecAndUsedByPrescope) {
  register_dummies();
  const auto names = predictor_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "test-constant"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "llapor"), names.end());
  const PredictorContext ctx{nullptr, 32, 8, 2};
  EXPECT_EQ(make_predictor("test-constant:expert=3", ctx)->name(), "test-constant");
  EXPECT_THROW(make_predictor("test-constant:exprt=3", ctx), InvalidArgument);
  EXPECT_THROW(make_predictor("test-constant:expert=9", ctx), InvalidArgument);

  g_predictions = 0;
  run("prescope:window=2,predictor=test-constant:expert=3");
  EXPECT_GT(g_predictions.load(), 0);  // prescope asked the predictor its spec named
  EXPECT_THROW(make_policy("prescope:predictor=no-such-predictor"), InvalidArgument);
  EXPECT_TRUE(policy_entry("prescope").takes_predictor);
  EXPECT_FALSE(policy_entry("lru").takes_predictor);
  EXPECT_TRUE(policy_entry("oracle").is_bound);
}

TEST(PolicyRegistry, PositionalPredictorAndCommaSplitSpecs) {
  register_dummies();
  g_predictions = 0;
  run("prescope:test-constant:expert=1");  // prescope's positional key is its predictor
  EXPECT_GT(g_predictions.load(), 0);
  EXPECT_EQ(join_spec_items({"lru", "prescope:window=2", "predictor=cooccurrence"}),
            (std::vector<std::string>{"lru", "prescope:window=2,predictor=cooccurrence"}));
}

// Each policy's entry lists the keys its reader reads, in its order: the "known:" list of an
// unknown key's error is the entry's, and the help text shows them.
TEST(PolicyRegistry, EntryKeysAreWhatItsReaderReads) {
  register_builtin_policies();
  for (const std::string& name : policy_names()) {
    const PolicyEntry& entry = policy_entry(name);
    if (name.rfind("test-", 0) == 0) continue;  // the dummies list no keys
    std::string known;
    for (const PolicyKey& k : entry.keys) known += (known.empty() ? "" : ", ") + k.name;
    try {
      make_policy(name + ":no_such_key=1");
      ADD_FAILURE() << name << ": unknown key accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("(known: " + (known.empty() ? "none" : known) + ")"), std::string::npos)
          << name << ": " << e.what();
    }
  }
  EXPECT_EQ(policy_usage("ondemand"), "ondemand");
  EXPECT_EQ(policy_usage("next-gate"), "next-gate[:scope=global/layer,lookahead=1..64]");
}

// A flag that stands for a key is folded into the specs that have the key and do not give it.
TEST(PolicyRegistry, WithPolicyKeyAddsOnlyWhereTheKeyExistsAndIsAbsent) {
  EXPECT_EQ(with_policy_key("lru", "scope", "layer"), "lru:scope=layer");
  EXPECT_EQ(with_policy_key("next-gate:lookahead=2", "scope", "layer"), "next-gate:lookahead=2,scope=layer");
  EXPECT_EQ(with_policy_key("lru:scope=global", "scope", "layer"), "lru:scope=global");  // the spec's wins
  EXPECT_EQ(with_policy_key("ondemand", "scope", "layer"), "ondemand");                  // no such key
  EXPECT_EQ(with_policy_key("prescope:cooccurrence", "window", "auto"), "prescope:predictor=cooccurrence,window=auto");
  EXPECT_EQ(with_policy_key("auto", "scope", "layer"), "auto");  // not an entry: left to the caller
  EXPECT_NE(make_policy(with_policy_key("prescope:cooccurrence", "window", "auto")), nullptr);
}

}  // namespace
}  // namespace ferry::moe
