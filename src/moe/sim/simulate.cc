#include "moe/sim/simulate.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "core/error.h"
#include "core/metrics.h"
#include "core/report.h"
#include "core/spec.h"
#include "core/units.h"
#include "moe/predict/predictor_registry.h"
#include "moe/trace/routing_stats.h"
#include "moe/trace/routing_trace.h"

namespace ferry::moe {
namespace fs = std::filesystem;

std::vector<SimulateRow> run_simulate(const SimulateOptions& o) {
  // Flags first (cheap), files after.
  ModelShape shape = model_shape(o.model_shape);
  const auto format = quant::parse_weight_format(o.weights);
  FERRY_REQUIRE(quant::quant_row_fits(format, shape.hidden) && quant::quant_row_fits(format, shape.ffn), "--weights ",
                o.weights, ": ", o.model_shape, "'s rows (", shape.hidden, ", ", shape.ffn, ") are not whole ",
                quant::quant_name(format), " blocks");
  shape.expert_format = format;
  FERRY_REQUIRE(!o.batches.empty(), "--batch is empty");
  for (int b : o.batches) FERRY_REQUIRE(b >= 1, "invalid --batch ", b, ": expected a batch of at least 1");
  FERRY_REQUIRE(!o.policies.empty(), "--policies is empty");
  const std::vector<std::string> policies = join_spec_items(o.policies);  // a spec's keys were split off on ','
  bool takes_predictor = false;
  for (const auto& p : policies) {
    check_policy_spec(p);  // throws naming an unknown policy (and the known ones), key or value
    FERRY_REQUIRE(!policy_entry(p).needs_routers, "policy '", Spec::name_of(p),
                  "' predicts from the model's routers, which a routing trace does not hold (it would run as "
                  "lru): run it with ferry moe bench on a model");
    takes_predictor |= policy_entry(p).takes_predictor;
  }
  FERRY_REQUIRE(o.window >= 0 && o.window <= 8, "invalid --window ", o.window, ": expected 1 to 8 layers (0: auto)");
  FERRY_REQUIRE(o.context_tokens >= 1, "invalid --context ", o.context_tokens, ": expected at least 1 token");
  const auto all_profiles =
      o.profiles_file.empty() ? builtin_hardware_profiles() : load_hardware_profiles(o.profiles_file);
  std::vector<HardwareProfile> profiles;
  for (const auto& name : o.profiles) profiles.push_back(find_profile(all_profiles, name));
  FERRY_REQUIRE(!profiles.empty(), "--profile is empty");
  const std::uint64_t mem_flag = o.device_mem.empty() ? 0 : parse_bytes(o.device_mem);
  FERRY_REQUIRE(o.device_mem.empty() || mem_flag > 0, "invalid --device-mem '", o.device_mem,
                "': expected a size above zero, e.g. 24GiB (leave it out for the profile's memory)");
  for (const auto& hw : profiles) {
    const std::uint64_t mem = mem_flag ? mem_flag : hw.device_mem_bytes;
    for (int b : o.batches) {
      TimeModel tm(hw, shape, o.context_tokens);
      const double budget = tm.expert_budget_bytes(mem, b);
      FERRY_REQUIRE(budget >= shape.expert_bytes(), "device memory ", format_bytes(static_cast<double>(mem)), " on ",
                    hw.name, " leaves ", format_bytes(std::max(0.0, budget)), " for experts at batch ", b,
                    " (non-expert weights ", format_bytes(shape.non_expert_bytes()), " + KV cache): less than one ",
                    shape.name, " expert (", format_bytes(shape.expert_bytes()), ")");
    }
  }
  const RoutingTrace trace = read_routing_trace(o.trace);
  // A trace records the MoE layers; one of another depth is refused rather than mapped, since the
  // policies and predictors learn from how routing follows from layer to layer.
  const int moe_layers = shape.moe_layers();
  FERRY_REQUIRE(trace.num_layers == moe_layers && trace.num_experts <= shape.experts && trace.top_k <= shape.top_k,
                "trace '", o.trace, "' (", trace.num_layers, " layers, ", trace.num_experts, " experts, top-",
                trace.top_k, ") does not fit model shape '", shape.name, "' (", moe_layers,
                moe_layers == shape.layers ? " layers, " : " MoE layers, ", shape.experts, " experts, top-",
                shape.top_k, ")");
  // Calibration counts for the static placements and MoE-Infinity's seed: the trace's own routing
  // (optimistic for those baselines).
  const std::vector<std::uint64_t> counts = routing_counts(trace, moe_layers, shape.experts);
  // The predictor spec is checked once here, so that a bad one fails before any run.
  const std::string spec = o.predictor;
  auto make_pred = [spec](const PolicyContext& ctx) {
    return make_predictor(spec, PredictorContext{nullptr, ctx.num_layers, ctx.num_experts, ctx.top_k});
  };
  if (takes_predictor)
    make_pred(PolicyContext{nullptr, nullptr, moe_layers, shape.experts, shape.top_k, {}});

  std::vector<SimulateRow> rows;
  for (const auto& hw : profiles) {
    const std::uint64_t mem = mem_flag ? mem_flag : hw.device_mem_bytes;
    for (int b : o.batches) {
      const FutureRouting routing = form_batches(trace, b);
      TimeModel tm(hw, shape, o.context_tokens);
      SimOptions so;
      so.batch = b;
      so.capacity_experts = static_cast<std::uint64_t>(tm.expert_budget_bytes(mem, b) / shape.expert_bytes());
      for (const auto& name : policies) {
        PolicyInputs inputs;
        inputs.expert_counts = counts;
        inputs.predictor = make_pred;
        inputs.future = &routing;
        // --window is the window= of the specs that have the key and do not give it.
        const std::string window = o.window ? std::to_string(o.window) : "auto";
        auto policy = make_policy(with_policy_key(name, "window", window), inputs);
        rows.push_back({hw.name, mem, simulate(routing, *policy, tm, so)});
        rows.back().result.policy = policy_label(name);
      }
    }
  }
  return rows;
}

std::string simulate_markdown(const std::vector<SimulateRow>& rows) {
  std::map<std::pair<std::string, int>, double> oracle;
  for (const auto& r : rows)
    if (const PolicyEntry* e = find_policy(Spec::name_of(r.result.policy)); e && e->is_bound)
      oracle[{r.profile, r.result.batch}] = r.result.tokens_per_s();
  ReportTable md = ReportTable::of({"profile", "batch", "policy", "tokens/s", "vs oracle", "TPOT ms", "hit rate",
                                    "moved", "io wait", "host execs", "pred. precision", "pred. recall"});
  for (const auto& row : rows) {
    const SimResult& r = row.result;
    auto it = oracle.find({row.profile, r.batch});
    const std::string rel =
        it != oracle.end() && it->second > 0 ? printf_cell(r.tokens_per_s() / it->second, "%.3f") : "-";
    md.add_row({row.profile, std::to_string(r.batch), r.policy, printf_cell(r.tokens_per_s(), "%.2f"), rel,
                printf_cell(r.tpot_ms(), "%.1f"), printf_cell(r.hit_rate(), "%.3f"),
                format_bytes(static_cast<double>(r.bytes_moved)), printf_cell(100 * r.io_wait_fraction(), "%.1f%%"),
                std::to_string(r.host_execs),
                r.prefetches ? printf_cell(r.prediction_precision(), "%.3f") : std::string("-"),
                r.needed ? printf_cell(r.prediction_recall(), "%.3f") : std::string("-")});
  }
  std::string out = md.markdown();
  // The gap split, per (profile, batch) that ran prescope, prescope-perfect and the bound.
  std::map<std::pair<std::string, int>, std::map<std::string, double>> tps;
  for (const auto& row : rows) tps[{row.profile, row.result.batch}][row.result.policy] = row.result.tokens_per_s();
  ReportTable gap = ReportTable::of({"profile", "batch", "prescope / oracle", "prescope-perfect / oracle",
                                     "gap: prediction", "gap: planning"});
  for (const auto& [key, m] : tps) {
    auto p = m.find("prescope"), q = m.find("prescope-perfect");
    auto o = oracle.find(key);
    if (p == m.end() || q == m.end() || o == oracle.end() || o->second <= 0) continue;
    const double a = p->second / o->second, b = q->second / o->second;
    gap.add_row({key.first, std::to_string(key.second), printf_cell(a, "%.3f"), printf_cell(b, "%.3f"),
                 printf_cell(100 * (b - a), "%+.1f pts"), printf_cell(100 * (1 - b), "%+.1f pts")});
  }
  if (!gap.rows().empty()) out += "\nprescope's gap to the oracle, split: prediction = prescope-perfect - prescope, planning = oracle - prescope-perfect (shares of the oracle's tokens/s)\n\n" + gap.markdown();
  return out;
}

std::vector<PlotScript> write_simulate_outputs(const std::vector<SimulateRow>& rows, const std::string& out_dir,
                                               const std::string& header) {
  make_dirs(out_dir);
  const fs::path dir(out_dir);
  ReportTable csv = ReportTable::of({"policy", "batch", "tokens_per_s", "tpot_ms", "hit_rate", "bytes_moved",
                                     "io_wait_fraction", "prediction_precision", "prediction_recall", "profile",
                                     "device_mem_bytes", "capacity_experts", "host_execs", "prefetches", "loads",
                                     "planner_us", "layer_compute_us"});
  for (const auto& row : rows) {
    const SimResult& r = row.result;
    csv.add_row({r.policy, stream_cell(r.batch), stream_cell(r.tokens_per_s()), stream_cell(r.tpot_ms()),
                 stream_cell(r.hit_rate()), stream_cell(r.bytes_moved), stream_cell(r.io_wait_fraction()),
                 stream_cell(r.prediction_precision()), stream_cell(r.prediction_recall()), row.profile,
                 stream_cell(row.device_mem_bytes), stream_cell(r.capacity_experts), stream_cell(r.host_execs),
                 stream_cell(r.prefetches), stream_cell(r.loads), stream_cell(r.planner_s_per_plan * 1e6),
                 stream_cell(r.device_layer_compute_s * 1e6)});
  }
  write_report_file((dir / "simulate.csv").string(), csv.csv());
  write_report_file((dir / "simulate.md").string(), header + "\n\n" + simulate_markdown(rows));
  // One panel per profile: tokens/s against batch, one line per policy.
  PanelChart chart;
  for (const auto& row : rows) chart.add(row.profile, row.result.policy, row.result.batch, row.result.tokens_per_s());
  PanelChart::Style style;
  style.panel_width = 560;
  style.height = 500;
  // The legend below the panel, where it cannot cover a line.
  style.settings = "set logscale x 2\nset logscale y\nset xlabel 'batch'\n"
                   "set ylabel 'decode tokens/s (simulated)'\nset key below horizontal font ',9'\nset grid\n";
  const std::string gp = (dir / "simulate.gp").string();
  write_report_file(gp, chart.gnuplot((dir / "simulate.png").string(), style));
  return {PlotScript{gp, ""}};
}

}  // namespace ferry::moe
