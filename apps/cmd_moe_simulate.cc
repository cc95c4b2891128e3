// `ferry moe simulate`: trace-driven simulation of the policies on modelled GPUs (no model
// weights needed); simulate.csv, simulate.md, simulate.png.
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "apps/cli.h"
#include "apps/moe_subcommands.h"
#include "apps/render_plots.h"
#include "moe/predict/predictor_registry.h"
#include "moe/sched/policy.h"
#include "moe/sim/simulate.h"
#include "moe/sim/time_model.h"

namespace ferry::apps {
namespace {

using namespace ferry::moe;

struct SimulateFlags {
  SimulateOptions sim;
  std::string out;
};

// The profiles of the profiles file this ferry finds, for --help.
std::string profile_choices() {
  try {
    std::vector<std::string> names;
    for (const auto& p : builtin_hardware_profiles()) names.push_back(p.name);
    return choices(names);
  } catch (const std::exception&) {
    return "(the profiles of --profiles)";
  }
}

int run_simulate_cmd(const SimulateFlags& f) {
  const SimulateOptions& so = f.sim;
  auto rows = run_simulate(so);
  std::string header = "ferry moe simulate: trace " + so.trace + ", model " + so.model_shape + " (experts " + so.weights + "), " +
                       (so.device_mem.empty() ? std::string("the profile's GPU memory") : so.device_mem) +
                       ", PreSched window " + std::to_string(so.window) + ", prescope predictor " + so.predictor;
  render_plots(write_simulate_outputs(rows, f.out, header), "ferry moe simulate");
  std::printf("%s\n\n%s\nwrote %s/simulate.csv, simulate.md, simulate.png\n", header.c_str(),
              simulate_markdown(rows).c_str(), f.out.c_str());
  return 0;
}

}  // namespace

MoeSubcommand add_simulate_command(CLI::App& moe) {
  auto flags = std::make_shared<SimulateFlags>();
  SimulateOptions& so = flags->sim;
  auto* sm = moe.add_subcommand("simulate", "trace-driven simulation of policies on modelled GPUs; simulate.csv, .md, .png");
  sm->add_option("--trace", so.trace, "routing trace (Mixtral JSONL, granite JSON, layer-0 JSONL)")->required();
  sm->add_option("--model-shape", so.model_shape, "model whose sizes the trace is simulated at: " + choices(model_shape_names()))->capture_default_str();
  sm->add_option("--profile", so.profiles, "comma-separated hardware profiles: " + profile_choices())
      ->delimiter(',')->capture_default_str();
  sm->add_option("--profiles", so.profiles_file, "profiles file (default: the profiles built in, from src/moe/sim/profiles.json)");
  sm->add_option("--weights", so.weights, "the routed experts' weight format: F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K or MXFP4")->capture_default_str();
  sm->add_option("--device-mem", so.device_mem, "GPU memory for the model, e.g. 24GiB (default: the profile's)");
  sm->add_option("--batch", so.batches, "comma-separated batch sizes")->delimiter(',')->capture_default_str();
  std::vector<std::string> policies;  // with their keys, from the registry
  for (const auto& name : trace_policy_names()) policies.push_back(policy_usage(name));
  sm->add_option("--policies", so.policies, "comma-separated policies NAME[:KEY=VALUE,...]: " + choices(policies))
      ->delimiter(',')->capture_default_str();
  sm->add_option("--predictor", so.predictor, "prescope's predictor spec NAME[:ARG]: " + choices(trace_predictor_names()))
      ->capture_default_str();
  sm->add_option("--window", so.window,
                 "PreSched window in layers (0: auto, the layers one transfer lasts); a spec's window= wins")
      ->capture_default_str();
  sm->add_option("--context", so.context_tokens, "KV-cache tokens per sequence")->capture_default_str();
  sm->add_option("--out", flags->out, "output directory")->required();
  return MoeSubcommand{sm, [flags] { return run_simulate_cmd(*flags); }};
}

}  // namespace ferry::apps
