// `ferry moe` subcommands that live in their own files, added to `ferry moe` by cmd_moe.cc.
#pragma once

#include <functional>

namespace CLI { class App; }

namespace ferry::apps {

struct MoeSubcommand {
  CLI::App* app = nullptr;   // the subcommand (owned by the parent app)
  std::function<int()> run;  // runs it with the parsed flags
};

// fit-predictor (cmd_moe_predict.cc): fits LLaPor on a trace.
MoeSubcommand add_fit_predictor_command(CLI::App& moe);
// logits (cmd_moe_logits.cc): teacher-forced logits of token sequences, as a .npy file.
MoeSubcommand add_logits_command(CLI::App& moe);
// serve (cmd_moe_serve.cc): the OpenAI-compatible HTTP server.
MoeSubcommand add_serve_command(CLI::App& moe);

}  // namespace ferry::apps
