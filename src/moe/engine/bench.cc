#include "moe/engine/bench.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "core/error.h"
#include "core/metrics.h"
#include "core/proc_stats.h"
#include "core/report.h"
#include "core/spec.h"
#include "moe/engine/engine.h"
#include "moe/engine/generate.h"
#include "moe/model/checkpoint.h"
#include "core/corpus.h"
#include "moe/model/reference_model.h"
#include "moe/predict/predictor_registry.h"
#include "moe/tokenizer/tokenizer.h"
#include "moe/trace/future_routing.h"
#include "moe/trace/routing_stats.h"
#include "moe/trace/routing_trace.h"

namespace ferry::moe {

namespace fs = std::filesystem;

namespace {

// Prompts come from the first 3/4 of the text, calibration from the last quarter.
std::vector<std::int32_t> corpus_tokens(const std::string& model_dir, const std::string& corpus, std::uint64_t max_bytes) {
  MoeConfig c = load_config(model_dir);
  auto tok = load_tokenizer(model_dir, c.tokenizer, c.vocab_size);
  CorpusOptions co;
  co.max_bytes = max_bytes;
  return tok->encode(read_corpus(corpus, co));
}

}  // namespace

TokenBatch make_prompts(const std::string& model_dir, const std::string& corpus, int batch, int len, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  TokenBatch out(batch, std::vector<std::int32_t>(len));
  if (corpus.empty()) {
    const int V = load_config(model_dir).vocab_size;
    for (auto& row : out)
      for (auto& v : row) v = static_cast<std::int32_t>(rng() % V);
    return out;
  }
  auto toks = corpus_tokens(model_dir, corpus, 2u << 20);
  const std::size_t usable = toks.size() * 3 / 4;
  FERRY_REQUIRE(usable > static_cast<std::size_t>(len) + 1, "corpus '", corpus, "' is too short for prompts of ", len,
                " tokens");
  for (auto& row : out) {
    const std::size_t at = rng() % (usable - len);
    row.assign(toks.begin() + at, toks.begin() + at + len);
  }
  return out;
}

namespace {

// The engine options of the sweep's runs at `budget` (the policy set per run).
EngineOptions engine_options(const BenchOptions& o, const std::string& budget) {
  EngineOptions eo;
  eo.device_mem = budget;
  eo.link = o.link;
  eo.compute = o.compute;
  eo.weights = o.weights;
  return eo;
}

}  // namespace

bool sweep_streams_from_disk(const BenchOptions& o) {
  for (const auto& budget : o.budgets)
    if (streams_from_disk(o.model_dir, engine_options(o, budget))) return true;
  return false;
}

std::vector<std::uint64_t> calibration_counts(const std::string& model_dir, const std::string& corpus, int tokens,
                                              std::uint64_t seed, const EngineOptions& run) {
  // Counts do not depend on placement: every expert resident over an unpaced link, unless the
  // run's experts stream from disk (the model may not fit in memory): then its link and budget.
  EngineOptions eo;
  eo.weights = run.weights;
  eo.policy = "lru";
  eo.compute = "none";
  const bool streams = streams_from_disk(model_dir, run);
  eo.link = streams ? resolved_link(model_dir, run) : "none";
  eo.device_mem = streams ? run.device_mem : "100%";
  auto eng = MoeEngine::open(model_dir, eo);
  std::vector<std::int32_t> calib;
  if (!corpus.empty()) {
    auto toks = corpus_tokens(model_dir, corpus, 2u << 20);
    const std::size_t from = toks.size() * 3 / 4;
    calib.assign(toks.begin() + from, toks.begin() + std::min(toks.size(), from + static_cast<std::size_t>(tokens)));
  } else {
    calib = make_prompts(model_dir, "", 1, tokens, seed)[0];
  }
  const int max_len = eng->config().max_position_embeddings;
  for (std::size_t at = 0; at < calib.size(); at += max_len) {
    eng->reset();
    eng->forward({std::vector<std::int32_t>(calib.begin() + at, calib.begin() + std::min(calib.size(), at + max_len))});
  }
  return eng->stats().expert_counts;
}

std::vector<BenchRow> run_bench(const BenchOptions& o, const BenchProgress& progress, std::string* engine) {
  FERRY_REQUIRE(!o.policies.empty() && !o.batches.empty() && !o.budgets.empty(), "bench needs policies, batches and budgets");
  for (int b : o.batches) FERRY_REQUIRE_POSITIVE(b, "--batch values");
  FERRY_REQUIRE(o.lru_scope == "global" || o.lru_scope == "layer", "invalid --lru-scope '", o.lru_scope,
                "': expected global or layer");
  FERRY_REQUIRE(o.new_tokens >= 2, "--tokens must be at least 2 (one prefill, one decode step)");
  std::vector<BenchRow> rows;
  const std::vector<std::string> policies = join_spec_items(o.policies);  // a spec's keys were split off on ','
  bool uses_counts = false;
  for (const auto& p : policies) {
    if (p == "auto") continue;  // lru or prescope, chosen by the engine once the memory plan is known
    FERRY_REQUIRE(!policy_entry(p).needs_future || !o.routing_trace.empty(), "policy ", p,
                  " needs the recorded future routing: give a routing trace (--routing)");
    check_policy_spec(p);  // a bad spec fails before any run
    uses_counts = uses_counts || policy_entry(p).uses_counts;
  }
  const RoutingTrace trace = o.routing_trace.empty() ? RoutingTrace{} : read_routing_trace(o.routing_trace);
  // Routing counts for the policies that read them: from calibration text (not the prompts), or
  // the routing trace's own when one drives the routing.
  std::vector<std::uint64_t> counts;
  if (uses_counts && o.routing_trace.empty())
    counts = calibration_counts(o.model_dir, o.corpus, o.calibration_tokens, o.seed + 99,
                                engine_options(o, o.budgets.front()));
  else if (uses_counts) {
    const MoeConfig c = Checkpoint::open(o.model_dir)->config();
    counts = routing_counts(trace, c.num_moe_layers(), c.num_experts);
  }
  const int total = static_cast<int>(policies.size() * o.batches.size() * o.budgets.size());
  for (const auto& budget : o.budgets)
    for (int batch : o.batches) {
      auto prompts = make_prompts(o.model_dir, o.corpus, batch, o.prompt_tokens, o.seed + batch);
      // The routing to come, for the policies that read it (oracle, prescope-perfect): the
      // replayed trace's, prompt and decode steps, twice with a warm-up run (each run resets the
      // engine and replays the same steps).
      FutureRouting future;
      if (!o.routing_trace.empty()) {
        future = replay_future(trace, batch, static_cast<int>(prompts.front().size()), o.new_tokens);
        if (o.warmup) {
          const auto once = future.steps;
          future.steps.insert(future.steps.end(), once.begin(), once.end());
          future.index();
        }
      }
      for (const auto& policy : policies) {
        EngineOptions eo = engine_options(o, budget);
        // The spec: the policy reads its keys (predictor=, window=, ...); --lru-scope is its scope=
        // where the spec does not give one.
        eo.policy = policy == "auto" ? policy : with_policy_key(policy, "scope", o.lru_scope);
        eo.policy_inputs.expert_counts = counts;
        if (!o.routing_trace.empty()) {
          eo.forced_routing = &trace;
          eo.policy_inputs.future = &future;
        }
        auto eng = MoeEngine::open(o.model_dir, eo);
        if (engine != nullptr && rows.empty()) *engine = eng->describe();
        SamplingOptions so;
        so.max_new_tokens = o.new_tokens;
        if (o.warmup) {
          generate(*eng, prompts, so);
          eng->reset_stats();
        }
        const std::uint64_t read_before = process_storage_read_bytes();
        reset_peak_rss();
        const EngineStats start = eng->stats();
        EngineStats prefilled;
        auto g = generate(*eng, prompts, so, [&] { prefilled = eng->stats(); });
        auto s = eng->stats();
        BenchRow r;
        r.policy = policy == "auto" ? policy : policy_label(policy);
        r.batch = batch;
        r.budget = budget;
        r.tokens_per_s = g.tokens_per_s();
        r.tpot_ms = g.tpot_s() * 1e3;
        r.ttft_ms = g.ttft_s * 1e3;
        r.hit_rate = s.hit_rate();
        r.bytes_moved = s.store.bytes_moved;
        r.io_wait_fraction = s.store.io_wait_s / std::max(1e-12, g.ttft_s + g.decode_s);
        r.device_mem_peak_bytes = s.store.peak_bytes;
        r.device_mem_budget_bytes = s.budget_bytes;
        r.host_execs = s.host_execs;
        r.expert_accesses = s.expert_accesses;
        r.storage_read_bytes = process_storage_read_bytes() - read_before;
        r.rss_peak_bytes = process_peak_rss_bytes();
        r.link_busy_s = s.store.link_busy_s;
        r.prefetch_accuracy = s.store.prefetches ? static_cast<double>(s.store.prefetches_used) / s.store.prefetches : 0;
        const double generated = static_cast<double>(batch) * o.new_tokens;
        r.predictor_us_per_token = s.predictor_s / generated * 1e6;
        r.scheduler_us_per_token = std::max(0.0, s.policy_s - s.predictor_s) / generated * 1e6;
        r.prefill = token_breakdown(prefilled, start, static_cast<double>(batch) * o.prompt_tokens);
        r.decode = token_breakdown(s, prefilled, static_cast<double>(batch) * g.decode_steps);
        rows.push_back(r);
        if (progress) progress(r, static_cast<int>(rows.size()), total);
      }
    }
  return rows;
}

const std::vector<std::string>& TokenBreakdown::parts() {
  static const std::vector<std::string> names = {"forward", "attention", "experts", "io_wait",
                                                 "moe_other", "head",    "other"};
  return names;
}

std::vector<double> TokenBreakdown::values() const {
  return {forward_us, attention_us, experts_us, io_wait_us, moe_other_us, head_us, other_us};
}

TokenBreakdown token_breakdown(const EngineStats& after, const EngineStats& before, double tokens) {
  TokenBreakdown b;
  if (tokens <= 0) return b;
  const double us = 1e6 / tokens;
  auto delta = [us](double a, double z) { return std::max(0.0, a - z) * us; };
  const double moe = delta(after.moe_s, before.moe_s);
  b.forward_us = delta(after.forward_s, before.forward_s);
  b.attention_us = delta(after.attention_s, before.attention_s);
  b.experts_us = delta(after.host_compute_s + after.device_compute_s, before.host_compute_s + before.device_compute_s);
  b.io_wait_us = delta(after.store.io_wait_s, before.store.io_wait_s);
  b.moe_other_us = std::max(0.0, moe - b.experts_us - b.io_wait_us);
  b.head_us = delta(after.head_s, before.head_s);
  b.other_us = std::max(0.0, b.forward_us - b.attention_us - moe - b.head_us);
  return b;
}

std::string bench_markdown(const std::vector<BenchRow>& rows) {
  // Runs that read from storage (the file link) also show what the kernel counted.
  const bool disk = std::any_of(rows.begin(), rows.end(), [](const BenchRow& r) { return r.storage_read_bytes > 0; });
  std::vector<std::string> head = {"budget", "batch", "policy", "tokens/s", "TPOT ms", "TTFT ms", "hit rate",
                                   "moved MiB", "io_wait", "host execs", "peak / budget MiB", "predictor us/tok",
                                   "scheduler us/tok"};
  if (disk) head.insert(head.end(), {"disk read MiB", "read MB/s", "RSS peak MiB"});
  ReportTable md = ReportTable::of(head);
  for (const auto& r : rows) {
    std::vector<std::string> row = {r.budget, std::to_string(r.batch), r.policy, printf_cell(r.tokens_per_s, "%.1f"),
                printf_cell(r.tpot_ms, "%.2f"), printf_cell(r.ttft_ms, "%.1f"), printf_cell(r.hit_rate, "%.3f"),
                printf_cell(r.bytes_moved / 1048576.0, "%.1f"), printf_cell(r.io_wait_fraction, "%.2f"),
                std::to_string(r.host_execs),
                printf_cell(r.device_mem_peak_bytes / 1048576.0, "%.2f") + " / " +
                    printf_cell(r.device_mem_budget_bytes / 1048576.0, "%.2f"),
                printf_cell(r.predictor_us_per_token, "%.1f"), printf_cell(r.scheduler_us_per_token, "%.1f")};
    if (disk)
      row.insert(row.end(), {printf_cell(r.storage_read_bytes / 1048576.0, "%.1f"), printf_cell(r.read_mb_per_s(), "%.0f"),
                             printf_cell(r.rss_peak_bytes / 1048576.0, "%.0f")});
    md.add_row(row);
  }
  return md.markdown();
}

std::vector<PlotScript> write_bench_outputs(const std::vector<BenchRow>& rows, const std::string& out_dir,
                                            const std::string& header) {
  make_dirs(out_dir);
  const fs::path dir(out_dir);
  std::vector<std::string> head = {"policy", "batch", "budget", "tokens_per_s", "tpot_ms", "ttft_ms", "hit_rate",
                                   "bytes_moved", "io_wait_fraction", "device_mem_peak_bytes",
                                   "device_mem_budget_bytes", "host_execs", "expert_accesses", "prefetch_accuracy",
                                   "predictor_us_per_token", "scheduler_us_per_token", "storage_read_bytes",
                                   "link_busy_s", "rss_peak_bytes"};
  for (const char* phase : {"prefill", "decode"})  // TokenBreakdown's parts, per phase
    for (const auto& part : TokenBreakdown::parts()) head.push_back(std::string(phase) + "_" + part + "_us");
  ReportTable csv = ReportTable::of(head);
  for (const auto& r : rows) {
    std::vector<std::string> row = {
        r.policy, stream_cell(r.batch), r.budget, stream_cell(r.tokens_per_s), stream_cell(r.tpot_ms),
        stream_cell(r.ttft_ms), stream_cell(r.hit_rate), stream_cell(r.bytes_moved),
        stream_cell(r.io_wait_fraction), stream_cell(r.device_mem_peak_bytes),
        stream_cell(r.device_mem_budget_bytes), stream_cell(r.host_execs), stream_cell(r.expert_accesses),
        stream_cell(r.prefetch_accuracy), stream_cell(r.predictor_us_per_token),
        stream_cell(r.scheduler_us_per_token), stream_cell(r.storage_read_bytes), stream_cell(r.link_busy_s),
        stream_cell(r.rss_peak_bytes)};
    for (const TokenBreakdown* b : {&r.prefill, &r.decode})
      for (double v : b->values()) row.push_back(stream_cell(v));
    csv.add_row(row);
  }
  write_report_file((dir / "bench.csv").string(), csv.csv());
  write_report_file((dir / "bench.md").string(), header + "\n\n" + bench_markdown(rows));
  // One panel per budget: tokens/s against batch, a line per policy.
  PanelChart chart;
  for (const auto& r : rows) chart.add(r.budget, r.policy, r.batch, r.tokens_per_s);
  PanelChart::Style style;
  style.panel_width = 520;
  style.height = 480;
  // The legend below the panel, where it cannot cover a line.
  style.settings =
      "set logscale x 2\nset xlabel 'batch'\nset ylabel 'decode tokens/s'\nset key below horizontal font ',9'\nset grid\n";
  style.title_prefix = "device budget ";
  const std::string gp = (dir / "bench.gp").string();
  write_report_file(gp, chart.gnuplot((dir / "bench.png").string(), style));
  return {PlotScript{gp, ""}};
}

OverheadResult measure_overhead(const std::string& model_dir, int batch, int prompt_tokens, int new_tokens, int repeats,
                                const std::string& corpus) {
  auto prompts = make_prompts(model_dir, corpus, batch, prompt_tokens, 7);
  EngineOptions eo;
  eo.policy = "lru";
  eo.device_mem = "100%";
  eo.link = "none";
  eo.preload = true;
  auto eng = MoeEngine::open(model_dir, eo);
  auto ck = Checkpoint::open(model_dir);
  auto ref = ReferenceModel::load(*ck);
  SamplingOptions so;
  so.max_new_tokens = new_tokens;
  OverheadResult r;
  r.batch = batch;
  generate(*eng, prompts, so);  // warm-up
  generate(*ref, prompts, so);
  for (int i = 0; i < repeats; ++i) {
    r.engine_tokens_per_s = std::max(r.engine_tokens_per_s, generate(*eng, prompts, so).tokens_per_s());
    r.reference_tokens_per_s = std::max(r.reference_tokens_per_s, generate(*ref, prompts, so).tokens_per_s());
  }
  return r;
}

}  // namespace ferry::moe
