// `ferry moe trace`: records each token's routing in every layer on held-out text (JSONL), and the
// router inputs (hidden states) that fit-predictor learns from.
#include <cstdio>
#include <memory>
#include <string>

#include <ATen/Parallel.h>
#include <CLI/CLI.hpp>

#include "apps/corpus_sequences.h"
#include "apps/engine_flags.h"
#include "apps/moe_subcommands.h"
#include "core/corpus.h"
#include "core/path_checks.h"
#include "moe/engine/engine.h"
#include "moe/engine/trace_recorder.h"
#include "moe/trace/routing_stats.h"

namespace ferry::apps {
namespace {

using namespace ferry::moe;

struct TraceFlags {
  std::string model, corpus, out, dataset = "ferry", weights;
  int sequences = 16, tokens = 256;
  bool no_hidden = false;
};

int run_trace(TraceFlags& f) {
  at::set_num_threads(1);
  if (f.corpus.empty()) f.corpus = default_corpus_path();
  std::vector<std::string> inputs = input_files(f.model);
  for (const std::string& c : input_files(f.corpus)) inputs.push_back(c);
  require_output_not_input(f.out, "--out", inputs, "--model or --corpus");
  require_output_not_input(f.out + ".hidden.bin", "--out", inputs, "--model or --corpus");
  auto seqs = corpus_sequences(f.model, f.corpus, f.sequences, f.tokens, true);
  if (f.no_hidden) {
    // Routing does not depend on placement: every expert resident from the start, nothing paced.
    EngineOptions eo;
    eo.policy = "lru";
    eo.device_mem = "100%";
    eo.link = "none";
    eo.compute = "none";
    eo.preload = true;
    eo.weights = f.weights;
    auto eng = MoeEngine::open(f.model, eo);
    TraceRecorder rec(eng.get(), TraceRecorderOptions{f.out, false, f.dataset});
    for (const auto& s : seqs) rec.record_sequence(s);
    rec.finish();
    std::printf("wrote %llu rows to %s\n", static_cast<unsigned long long>(rec.rows()), f.out.c_str());
    return 0;
  }
  auto t = record_routing(f.model, seqs, f.out, f.dataset, f.weights);
  std::printf("wrote %zu tokens x %d layers to %s (+ %s.hidden.bin)\n%s\n", t.tokens.size(), t.num_layers,
              f.out.c_str(), f.out.c_str(), format_routing_stats(routing_stats(t)).c_str());
  return 0;
}

}  // namespace

MoeSubcommand add_trace_command(CLI::App& moe) {
  auto flags = std::make_shared<TraceFlags>();
  auto& f = *flags;
  auto* tr = moe.add_subcommand("trace", "record routing per token and layer (JSONL + hidden states)");
  tr->add_option("--model", f.model, "model directory or GGUF file")->required();
  tr->add_option("--corpus", f.corpus, "text file or folder (default: the Python standard library)");
  tr->add_option("--out", f.out, "JSONL file to write (hidden states go to FILE.hidden.bin)")->required();
  tr->add_option("--sequences", f.sequences, "sequences to trace")->capture_default_str();
  tr->add_option("--tokens", f.tokens, "tokens per sequence")->capture_default_str();
  tr->add_option("--dataset", f.dataset, "the rows' dataset field")->capture_default_str();
  tr->add_flag("--no-hidden", f.no_hidden, "skip the hidden-state side file");
  add_weights_flag(*tr, f.weights);
  return MoeSubcommand{tr, [flags] { return run_trace(*flags); }};
}

}  // namespace ferry::apps
