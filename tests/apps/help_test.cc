// `ferry --help` and every subcommand's --help print their usage (CLI11's help exception used to
// be swallowed: nothing printed, exit 0), and the lists of choices they print come from the
// registries, so that a newly registered algorithm, codec, policy, predictor or model shape
// cannot be missing from them.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>
#include <vector>

#include "compress/codec_registry.h"
#include "moe/predict/predictor_registry.h"
#include "moe/sched/policy.h"
#include "moe/sim/time_model.h"
#include "train/models/model.h"
#include "train/strategy.h"

namespace ferry {
namespace {

struct Output {
  std::string text;
  int exit_code = -1;
};

// Runs `ferry ARGS` and captures stdout.
Output run_ferry(const std::string& args) {
  Output out;
  FILE* p = popen((std::string(FERRY_BIN) + " " + args + " 2>/dev/null").c_str(), "r");
  if (!p) return out;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.text.append(buf, n);
  const int status = pclose(p);
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

void expect_lists(const Output& help, const std::vector<std::string>& names, const std::string& what) {
  ASSERT_FALSE(names.empty()) << what;
  for (const auto& n : names) EXPECT_NE(help.text.find(n), std::string::npos) << what << " '" << n << "' missing";
}

TEST(Help, TopLevelListsEveryCommand) {
  for (const char* args : {"--help", "-h"}) {
    const Output o = run_ferry(args);
    EXPECT_EQ(o.exit_code, 0) << args;
    for (const char* cmd : {"train", "compare", "run", "units", "moe"})
      EXPECT_NE(o.text.find(cmd), std::string::npos) << args << ": " << cmd;
  }
}

TEST(Help, EverySubcommandPrintsItsOptionsAndExitsZero) {
  for (const char* cmd :
       {"train", "compare", "run", "units", "moe", "moe make-tiny", "moe pretrain", "moe generate", "moe bench",
        "moe trace", "moe fit-predictor", "moe demo", "moe simulate"}) {
    const Output o = run_ferry(std::string(cmd) + " --help");
    EXPECT_EQ(o.exit_code, 0) << cmd;
    EXPECT_NE(o.text.find("Usage:"), std::string::npos) << cmd << ":\n" << o.text;
    EXPECT_NE(o.text.find("--help"), std::string::npos) << cmd;
  }
}

TEST(Help, DefaultsArePrinted) {
  const Output o = run_ferry("train --help");
  // Defaults show after the option's type, as CLI11 prints them: --np INT=4, --lr FLOAT=0.05.
  EXPECT_NE(o.text.find("--np INT=4"), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("--lr FLOAT=0.05"), std::string::npos) << o.text;
  // Also options whose definition gives no explicit default text (e.g. --max-steps).
  EXPECT_NE(o.text.find("--max-steps INT=0"), std::string::npos) << o.text;
}

TEST(Help, ChoicesComeFromTheRegistries) {
  train::register_builtin_strategies();
  moe::register_builtin_policies();
  moe::register_builtin_predictors();
  const Output train_help = run_ferry("train --help");
  expect_lists(train_help, train::strategy_names(), "train --algo");
  expect_lists(train_help, train::model_names(), "train --model");
  expect_lists(train_help, compress::codec_names(), "train --codec");
  const Output compare_help = run_ferry("compare --help");
  expect_lists(compare_help, train::strategy_names(), "compare --algos");
  expect_lists(compare_help, train::model_names(), "compare --model");
  expect_lists(run_ferry("moe generate --help"), moe::policy_names(), "moe generate --policy");
  expect_lists(run_ferry("moe bench --help"), moe::policy_names(), "moe bench --policies");
  const Output sim = run_ferry("moe simulate --help");
  // The simulator lists what a routing trace can drive (next-gate needs a model's routers).
  expect_lists(sim, moe::trace_policy_names(), "moe simulate --policies");
  expect_lists(sim, moe::trace_predictor_names(), "moe simulate --predictor");
  EXPECT_LT(moe::trace_policy_names().size(), moe::policy_names().size());
  expect_lists(sim, moe::model_shape_names(), "moe simulate --model-shape");
  std::vector<std::string> profiles;
  for (const auto& p : moe::builtin_hardware_profiles()) profiles.push_back(p.name);
  expect_lists(sim, profiles, "moe simulate --profile");
}

}  // namespace
}  // namespace ferry
