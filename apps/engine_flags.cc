#include "apps/engine_flags.h"

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "apps/cli.h"
#include "core/error.h"
#include "core/spec.h"
#include "moe/engine/bench.h"
#include "moe/engine/engine.h"
#include "moe/quant/quant_type.h"
#include "moe/sched/policy.h"
#include "moe/store/link.h"

namespace ferry::apps {
namespace {

// One help text per flag; a sweep's adds that it takes a list (sweep()).

// Every policy is listed with its keys, from its registry entry (help_test checks it); those that
// read the recorded future are marked.
std::string policy_help() {
  std::vector<std::string> engine, simulator;
  for (const auto& name : moe::policy_names())
    (moe::find_policy(name)->needs_future ? simulator : engine).push_back(moe::policy_usage(name));
  std::string help = "offloading policy NAME[:KEY=VALUE,...]: auto (lru with every expert loaded at start when they "
                     "all fit the budget, else prescope), " + choices(engine);
  if (!simulator.empty()) help += " (in the simulator and on --routing only: " + choices(simulator) + ")";
  return help;
}
constexpr const char* kDeviceMemHelp =
    "device budget for routed experts: auto (every expert resident when the model fits in the memory this process may "
    "use, else what fits beside the dense weights, the KV cache and the workspace), bytes (256MiB) or % of all experts; "
    "a budget that cannot fit is refused before loading";
constexpr const char* kWeightsHelp =
    "the routed experts' weight format: F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K or MXFP4 (quantized at load); default: as "
    "the model stores them (F32 for a checkpoint directory, MXFP4 for gpt-oss's MXFP4 experts, the file's types for a GGUF "
    "file)";
std::string sweep(const std::string& help) { return help + "; comma-separated, one run each"; }

void add_hardware_flags(CLI::App& app, std::string& link, std::string& compute, std::string& weights) {
  app.add_option("--link", link, "host-to-device link, " + moe::link_help())->capture_default_str();
  app.add_option("--compute", compute, moe::compute_help())->capture_default_str();
  app.add_option("--weights", weights, kWeightsHelp)->capture_default_str();
}

// future_known: the routing is a trace's (ferry moe bench --routing), so the policies that read the
// recorded future can run.
void check_policy(const char* flag, const std::string& spec, bool future_known = false) {
  if (spec == "auto") return;
  // Capabilities are data: a policy that reads the recorded future says so in its entry.
  FERRY_REQUIRE(future_known || !moe::policy_entry(spec).needs_future, flag, " ", spec,
                " needs the recorded future routing: it runs in the simulator (ferry moe simulate) and in ferry moe "
                "bench on a trace's routing (--routing)");
  moe::check_policy_spec(spec);  // a bad spec fails before the model loads
}

void check_hardware(const std::string& link, const std::string& compute, const std::string& weights) {
  moe::parse_link_spec(link);
  moe::parse_compute_profile(compute);
  if (!weights.empty()) moe::quant::parse_weight_format(weights);
}

}  // namespace

void add_weights_flag(CLI::App& app, std::string& weights) {
  app.add_option("--weights", weights, kWeightsHelp)
      ->each([](const std::string& w) { moe::quant::parse_weight_format(w); });  // throws naming --weights
}

void add_engine_flags(CLI::App& app, moe::EngineOptions& o) {
  app.add_option("--policy", o.policy, policy_help())->capture_default_str();
  app.add_option("--device-mem", o.device_mem, kDeviceMemHelp)->capture_default_str();
  add_hardware_flags(app, o.link, o.compute, o.weights);
  app.callback([&o] { check_engine_flags(o); });
}

void add_engine_sweep_flags(CLI::App& app, moe::BenchOptions& o) {
  app.add_option("--policies", o.policies, sweep(policy_help()))->delimiter(',')->capture_default_str();
  app.add_option("--device-mem", o.budgets, sweep(kDeviceMemHelp))->delimiter(',')->capture_default_str();
  add_hardware_flags(app, o.link, o.compute, o.weights);
  app.callback([&o] { check_engine_sweep_flags(o); });
}

void check_engine_flags(const moe::EngineOptions& o) {
  check_policy("--policy", o.policy);
  moe::parse_device_mem(o.device_mem);  // the budget's form; against the model when it opens
  check_hardware(o.link, o.compute, o.weights);
}

void check_engine_sweep_flags(const moe::BenchOptions& o) {
  FERRY_REQUIRE(!o.policies.empty(), "--policies is empty");
  FERRY_REQUIRE(!o.budgets.empty(), "--device-mem is empty");
  // The list was split on every ',', a spec's own keys too ("prescope:window=2,predictor=...").
  for (const auto& p : join_spec_items(o.policies)) check_policy("--policies:", p, !o.routing_trace.empty());
  for (const auto& b : o.budgets) moe::parse_device_mem(b);
  check_hardware(o.link, o.compute, o.weights);
}

}  // namespace ferry::apps
