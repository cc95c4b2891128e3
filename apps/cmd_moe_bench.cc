// `ferry moe bench`: every policy x batch x budget on one model under one link and compute
// profile; bench.csv, bench.md, bench.png (and the engine's own cost with --overhead).
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include <ATen/Parallel.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "apps/cli.h"
#include "apps/engine_flags.h"
#include "apps/moe_subcommands.h"
#include "apps/render_plots.h"
#include "apps/wait_policy.h"
#include "core/corpus.h"
#include "core/metrics.h"
#include "core/progress.h"
#include "moe/engine/bench.h"
#include "moe/engine/engine.h"

namespace ferry::apps {

using namespace ferry::moe;
namespace fs = std::filesystem;

namespace {

struct BenchFlags {
  BenchOptions bench = [] {
    BenchOptions b;
    b.corpus = "default";
    return b;
  }();
  std::string out;
  int threads = 1;
  bool overhead = false;
};

std::string bench_header(const BenchOptions& o, const std::string& engine) {
  return "ferry moe bench on " + o.model_dir + ": " + engine + "; prompt " + std::to_string(o.prompt_tokens) +
         " tokens, " + std::to_string(o.new_tokens) + " generated";
}

}  // namespace

int run_bench_report(BenchOptions& o, const std::string& out, int threads, bool overhead) {
  prefer_passive_wait(sweep_streams_from_disk(o));
  at::set_num_threads(threads);
  if (o.corpus == "default") o.corpus = default_corpus_path();
  ProgressOptions po;
  po.label = "bench";
  po.unit = "run";
  Progress bar(static_cast<std::int64_t>(o.policies.size() * o.batches.size() * o.budgets.size()), po);
  std::string engine;
  auto rows = run_bench(
      o,
      [&](const BenchRow& r, int done, int) {
        char s[128];
        std::snprintf(s, sizeof s, "%s b%d %s: %.1f tok/s", r.policy.c_str(), r.batch, r.budget.c_str(), r.tokens_per_s);
        bar.update(done, s);
      },
      &engine);
  bar.finish();
  const std::string header = bench_header(o, engine);
  std::printf("%s\n", header.c_str());
  render_plots(write_bench_outputs(rows, out, header), "ferry moe bench");
  std::printf("\n%s\n", bench_markdown(rows).c_str());
  if (overhead) {
    nlohmann::json j = nlohmann::json::array();
    std::string md = "\nEngine cost, every expert resident, unpaced (best of 3):\n\n| batch | engine tok/s | reference tok/s | ratio |\n|---|---|---|---|\n";
    for (int b : o.batches) {
      auto r = measure_overhead(o.model_dir, b, o.prompt_tokens, o.new_tokens, 3, o.corpus);
      char line[160];
      std::snprintf(line, sizeof line, "| %d | %.1f | %.1f | %.3f |\n", b, r.engine_tokens_per_s, r.reference_tokens_per_s,
                    r.ratio());
      md += line;
      j.push_back({{"batch", b}, {"engine_tokens_per_s", r.engine_tokens_per_s},
                   {"reference_tokens_per_s", r.reference_tokens_per_s}, {"ratio", r.ratio()}});
    }
    std::printf("%s\n", md.c_str());
    write_json_file((fs::path(out) / "overhead.json").string(), j);
    std::ofstream(fs::path(out) / "bench.md", std::ios::app) << md;
  }
  std::printf("wrote %s/bench.csv, bench.md, bench.png\n", out.c_str());
  return 0;
}

MoeSubcommand add_bench_command(CLI::App& moe) {
  auto flags = std::make_shared<BenchFlags>();
  auto& f = *flags;
  BenchOptions& bo = f.bench;
  auto* bn = moe.add_subcommand("bench", "compare policies x batches x budgets; bench.csv, bench.md, bench.png");
  bn->footer(kWaitPolicyHelp);
  bn->add_option("--model", bo.model_dir, "model directory or GGUF file")->required();
  add_engine_sweep_flags(*bn, bo);
  bn->add_option("--batch", bo.batches, "comma-separated batch sizes")->delimiter(',')->capture_default_str();
  bn->add_option("--tokens", bo.new_tokens, "generated tokens per sequence")->capture_default_str();
  bn->add_option("--prompt-tokens", bo.prompt_tokens, "prompt tokens per sequence")->capture_default_str();
  bn->add_option("--corpus", bo.corpus, "prompt text: file or folder ('default' = Python stdlib, '' = random)")
      ->capture_default_str();
  bn->add_option("--lru-scope", bo.lru_scope, "global or layer")->capture_default_str();
  bn->add_option("--routing", bo.routing_trace,
                 "routing trace (JSONL, e.g. ../shared/data/moe-traces/mixtral-8x7b/gsm8k.jsonl) whose decode tokens "
                 "replace the routers' choices; the model must have its layers, experts and top-k");
  bn->add_flag("--warmup", bo.warmup, "run each configuration once untimed first (experts resident, caches warm)");
  bn->add_option("--out", f.out, "output directory")->required();
  bn->add_option("--threads", f.threads, "libtorch threads")->check(thread_count())->capture_default_str();
  bn->add_flag("--overhead", f.overhead, "also measure all-resident engine vs the reference forward");
  return MoeSubcommand{bn, [flags] { return run_bench_report(flags->bench, flags->out, flags->threads, flags->overhead); }};
}

}  // namespace ferry::apps
