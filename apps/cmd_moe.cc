// `ferry moe <command>`: MoE inference with expert offloading. Each command lives in its own
// cmd_moe_*.cc file (apps/moe_subcommands.h); this file adds them and runs the one given.
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "apps/cli.h"
#include "apps/moe_subcommands.h"
#include "core/error.h"
#include "moe/predict/predictor_registry.h"
#include "moe/sched/policy.h"

namespace ferry::apps {

int run_moe(int argc, char** argv) {
  moe::register_builtin_policies();
  moe::register_builtin_predictors();
  CLI::App app{"MoE inference with expert offloading (Hugging Face safetensors or GGUF; moe/model/family.h lists the families)", "ferry moe"};
  init_app(app);
  app.require_subcommand(1);
  // In the order --help and the error below list them.
  const std::vector<MoeSubcommand> commands = {
      add_make_tiny_command(app), add_pretrain_command(app), add_generate_command(app),
      add_bench_command(app),     add_trace_command(app),    add_fit_predictor_command(app),
      add_logits_command(app),    add_serve_command(app),    add_demo_command(app),
      add_simulate_command(app),  add_quantize_command(app),
  };

  // `ferry moe` alone or with an unknown word: one line listing the commands.
  std::vector<std::string> names;
  bool known = false;
  for (const MoeSubcommand& c : commands) {
    names.push_back(c.app->get_name());
    known |= argc >= 2 && c.app->check_name(argv[1]);
  }
  if (argc < 2 || (argv[1][0] != '-' && !known)) {
    FERRY_THROW(InvalidArgument, argc < 2 ? std::string("ferry moe needs a command")
                                          : "unknown command 'moe " + std::string(argv[1]) + "'",
                "; commands: ", choices(names), " (ferry moe COMMAND --help)");
  }
  parse_command_line(app, argc, argv);
  for (const MoeSubcommand& c : commands)
    if (*c.app) return c.run();
  return 0;
}

}  // namespace ferry::apps
