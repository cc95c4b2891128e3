// The `ferry moe` subcommands, one file each (cmd_moe_*.cc), added to `ferry moe` by cmd_moe.cc
// in the order its help lists them.
#pragma once

#include <functional>
#include <string>

namespace CLI { class App; }
namespace ferry::moe { struct BenchOptions; }

namespace ferry::apps {

struct MoeSubcommand {
  CLI::App* app = nullptr;   // the subcommand (owned by the parent app)
  std::function<int()> run;  // runs it with the parsed flags
};

// make-tiny (cmd_moe_make_tiny.cc): a random-weight model of a Hugging Face MoE family.
MoeSubcommand add_make_tiny_command(CLI::App& moe);
// pretrain (cmd_moe_pretrain.cc): trains a small MoE on text so its routers are learned.
MoeSubcommand add_pretrain_command(CLI::App& moe);
// generate (cmd_moe_generate.cc): text from a prompt with experts offloaded.
MoeSubcommand add_generate_command(CLI::App& moe);
// bench (cmd_moe_bench.cc): policies x batches x budgets on one model.
MoeSubcommand add_bench_command(CLI::App& moe);
// trace (cmd_moe_trace.cc): records routing per token and layer.
MoeSubcommand add_trace_command(CLI::App& moe);
// fit-predictor (cmd_moe_predict.cc): fits LLaPor on a trace.
MoeSubcommand add_fit_predictor_command(CLI::App& moe);
// logits (cmd_moe_logits.cc): teacher-forced logits of token sequences, as a .npy file.
MoeSubcommand add_logits_command(CLI::App& moe);
// serve (cmd_moe_serve.cc): the OpenAI-compatible HTTP server.
MoeSubcommand add_serve_command(CLI::App& moe);
// demo (cmd_moe_demo.cc): a short bench of the policies on a tiny model.
MoeSubcommand add_demo_command(CLI::App& moe);
// simulate (cmd_moe_simulate.cc): trace-driven simulation of policies on modelled GPUs.
MoeSubcommand add_simulate_command(CLI::App& moe);
// quantize (cmd_moe_quantize.cc): a Hugging Face checkpoint as a GGUF file.
MoeSubcommand add_quantize_command(CLI::App& moe);

// Runs a bench and writes bench.csv, bench.md and bench.png to `out` (and overhead.json with
// `overhead`); prints the table. Shared by bench and demo (cmd_moe_bench.cc).
int run_bench_report(moe::BenchOptions& o, const std::string& out, int threads, bool overhead);

}  // namespace ferry::apps
