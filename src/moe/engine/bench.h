// `ferry moe bench`: every policy x batch x budget on one model, same prompts, link and compute
// profile; writes bench.csv, bench.md (a Markdown table) and bench.gp (gnuplot: bench.png). Also the
// engine's own cost: tokens/s with every expert resident against the plain reference forward.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/report.h"
#include "moe/engine/engine.h"
#include "moe/model/language_model.h"

namespace ferry::moe {

struct BenchOptions {
  std::string model_dir;                     // checkpoint directory
  // Policy specs (make_policy(): "lru:scope=layer", "prescope:window=2,predictor=cooccurrence");
  // "prescope:PREDICTOR" (a make_predictor() spec such as llapor:DIR) is reported as "prescope+NAME".
  std::vector<std::string> policies = {"ondemand", "lru", "static-hot", "next-gate", "fiddler"};
  std::vector<int> batches = {1, 4, 16};     // sequences decoded together
  std::vector<std::string> budgets = {"auto"};  // --device-mem values
  int prompt_tokens = 32;                    // prompt length per sequence
  int new_tokens = 64;                       // generated tokens per sequence
  std::string link = "auto";                 // see parse_link_spec(), resolve_auto_link()
  std::string compute = "auto";              // see parse_compute_profile(), resolve_auto_compute()
  std::string weights = "";                  // the experts' weight format (EngineOptions::weights)
  std::string corpus;                        // prompts and calibration text come from here ("" = random tokens)
  int calibration_tokens = 512;              // routing counts for static-hot / fiddler, from other text than the prompts
  std::uint64_t seed = 1;                    // prompt selection
  std::string lru_scope = "global";          // lru / next-gate key scope, where a spec does not give it
  // An untimed run of the same prompts first (as llama-bench's warm-up): the timed run starts with
  // the experts the warm-up left on the device, page cache and CPU caches warm.
  bool warmup = false;
  // A routing trace (read_routing_trace()) whose decode tokens replace the routers' choices
  // (EngineOptions::forced_routing): the policies and predictors see real routing on a model of
  // the trace's shape with random weights. Empty: the model's own routers.
  std::string routing_trace;
};

// Where a token's time goes (engine.h, EngineStats): microseconds per token of one phase (prefill:
// per prompt position; decode: per token after the first), wall time. `moe_other` is the MoE
// blocks' time outside the expert calls and the waits for loads (norm, router, dispatch, shared
// experts); `other` is the forward's time outside attention, the MoE blocks and the head.
struct TokenBreakdown {
  double forward_us = 0, attention_us = 0, experts_us = 0, io_wait_us = 0, moe_other_us = 0, head_us = 0,
         other_us = 0;
  static const std::vector<std::string>& parts();  // "forward", "attention", ... as the fields
  std::vector<double> values() const;              // in parts()' order
};
// The breakdown of what the engine counted between `before` and `after` over `tokens` tokens.
TokenBreakdown token_breakdown(const EngineStats& after, const EngineStats& before, double tokens);

struct BenchRow {
  std::string policy;
  int batch = 0;
  std::string budget;  // as given ("25%")
  double tokens_per_s = 0, tpot_ms = 0, ttft_ms = 0, hit_rate = 0;
  std::uint64_t bytes_moved = 0;
  double io_wait_fraction = 0;  // io_wait / (prefill + decode time)
  std::uint64_t device_mem_peak_bytes = 0, device_mem_budget_bytes = 0;
  std::uint64_t host_execs = 0, expert_accesses = 0;
  // What the kernel counted during generation (after the engine opened): bytes fetched from
  // storage (a page-cache hit is not one), the link's busy time, and the process's peak resident set.
  std::uint64_t storage_read_bytes = 0, rss_peak_bytes = 0;
  double link_busy_s = 0;
  double read_mb_per_s() const { return link_busy_s > 0 ? storage_read_bytes / link_busy_s / 1e6 : 0; }
  double prefetch_accuracy = 0;  // prefetched experts later used / prefetches
  // Overhead per generated token (batch x new tokens; the prompt's share included), steady clock:
  // the predictor the policy was given, and the rest of the policy's time (placement, planning,
  // prefetch and victim choices). Policies that build their own predictor (next-gate) count it
  // as scheduler time.
  double predictor_us_per_token = 0, scheduler_us_per_token = 0;
  TokenBreakdown prefill, decode;
};

// Called after each run with its row and (done, total).
using BenchProgress = std::function<void(const BenchRow&, int done, int total)>;

// `engine`, when given, receives the first run's MoeEngine::describe() (the model, its formats and
// the cost model), so that the report's header costs no extra model load.
std::vector<BenchRow> run_bench(const BenchOptions& options, const BenchProgress& progress = {},
                                std::string* engine = nullptr);

// bench.csv, bench.md and bench.gp in `out_dir`; returns bench.gp, which draws bench.png, for
// the application to render (core/report.h).
std::vector<PlotScript> write_bench_outputs(const std::vector<BenchRow>& rows, const std::string& out_dir,
                                            const std::string& header);
std::string bench_markdown(const std::vector<BenchRow>& rows);

struct OverheadResult {
  int batch = 0;
  double engine_tokens_per_s = 0;     // every expert resident, unpaced: the engine's own cost
  double reference_tokens_per_s = 0;  // the plain reference forward
  double ratio() const { return reference_tokens_per_s > 0 ? engine_tokens_per_s / reference_tokens_per_s : 0; }
};

// Best of `repeats` alternating runs of each, greedy decoding of `new_tokens` after `prompt_tokens`.
OverheadResult measure_overhead(const std::string& model_dir, int batch, int prompt_tokens, int new_tokens,
                                int repeats, const std::string& corpus);

// Whether any run of the sweep streams its experts from disk (streams_from_disk() of the engine
// options each budget runs with): the launch's wait policy asks it (apps/wait_policy.h).
bool sweep_streams_from_disk(const BenchOptions& o);

// Routing counts [layer * E + e] of `tokens` calibration tokens for the static placements
// (static-hot, fiddler: PolicyInputs::expert_counts): from the last quarter of the corpus, which
// make_prompts() never takes prompts from, or random tokens drawn with `seed` when corpus is empty.
// `run`: the engine options of the runs the counts are for (the experts' format; and, when the
// experts stream from disk, the link and budget the calibration run uses too).
std::vector<std::uint64_t> calibration_counts(const std::string& model_dir, const std::string& corpus, int tokens,
                                              std::uint64_t seed, const EngineOptions& run);

// B prompts of `len` tokens: windows of the corpus text (or random tokens when corpus is empty).
TokenBatch make_prompts(const std::string& model_dir, const std::string& corpus, int batch, int len,
                        std::uint64_t seed);

}  // namespace ferry::moe
