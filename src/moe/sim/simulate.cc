#include "moe/sim/simulate.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "core/error.h"
#include "core/metrics.h"
#include "core/units.h"
#include "moe/predict/predictor_registry.h"
#include "moe/trace/routing_trace.h"

namespace ferry::moe {
namespace fs = std::filesystem;

std::vector<SimulateRow> run_simulate(const SimulateOptions& o) {
  // Flags first (cheap), files after.
  const ModelShape shape = model_shape(o.model_shape);
  FERRY_REQUIRE(!o.batches.empty(), "--batch is empty");
  for (int b : o.batches) FERRY_REQUIRE(b >= 1, "invalid --batch ", b, ": expected a batch of at least 1");
  FERRY_REQUIRE(!o.policies.empty(), "--policies is empty");
  register_builtin_policies();
  const auto known = policy_names();
  for (const auto& p : o.policies)
    if (std::find(known.begin(), known.end(), p) == known.end()) make_policy(p);  // throws naming the known ones
  FERRY_REQUIRE(o.window >= 1 && o.window <= 8, "invalid --window ", o.window, ": expected 1 to 8 layers");
  FERRY_REQUIRE(o.context_tokens >= 1, "invalid --context ", o.context_tokens, ": expected at least 1 token");
  const std::string pfile = o.profiles_file.empty() ? find_hardware_profiles() : o.profiles_file;
  FERRY_REQUIRE(!pfile.empty(), "no hardware profiles: src/moe/sim/profiles.json not found (give --profiles FILE)");
  const auto all_profiles = load_hardware_profiles(pfile);
  std::vector<HardwareProfile> profiles;
  for (const auto& name : o.profiles) profiles.push_back(find_profile(all_profiles, name));
  FERRY_REQUIRE(!profiles.empty(), "--profile is empty");
  const std::uint64_t mem_flag = o.device_mem.empty() ? 0 : parse_bytes(o.device_mem);
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
  FERRY_REQUIRE(trace.num_layers == shape.layers && trace.num_experts <= shape.experts && trace.top_k <= shape.top_k,
                "trace '", o.trace, "' (", trace.num_layers, " layers, ", trace.num_experts, " experts, top-",
                trace.top_k, ") does not fit model shape '", shape.name, "' (", shape.layers, " layers, ",
                shape.experts, " experts, top-", shape.top_k, ")");
  // Calibration counts for the static placements and MoE-Infinity's seed: the trace's own routing
  // (optimistic for those baselines).
  std::vector<std::uint64_t> counts(static_cast<std::size_t>(shape.layers) * shape.experts, 0);
  for (const auto& t : trace.tokens)
    for (int l = 0; l < static_cast<int>(t.experts.size()); ++l)
      for (int e : t.experts[l])
        if (e >= 0 && e < shape.experts) ++counts[static_cast<std::size_t>(l) * shape.experts + e];
  // The predictor spec is checked once here, so that a bad one fails before any run.
  const std::string spec = o.predictor;
  auto make_pred = [spec](const PolicyContext& ctx) {
    return make_predictor(spec, PredictorContext{nullptr, ctx.num_layers, ctx.num_experts, ctx.top_k});
  };
  if (std::find(o.policies.begin(), o.policies.end(), "prescope") != o.policies.end())
    make_pred(PolicyContext{nullptr, nullptr, shape.layers, shape.experts, shape.top_k, {}});

  std::vector<SimulateRow> rows;
  for (const auto& hw : profiles) {
    const std::uint64_t mem = mem_flag ? mem_flag : hw.device_mem_bytes;
    for (int b : o.batches) {
      const FutureRouting routing = form_batches(trace, b);
      TimeModel tm(hw, shape, o.context_tokens);
      SimOptions so;
      so.batch = b;
      so.capacity_experts = static_cast<std::uint64_t>(tm.expert_budget_bytes(mem, b) / shape.expert_bytes());
      for (const auto& name : o.policies) {
        PolicyOptions po;
        po.expert_counts = counts;
        po.window = o.window;
        po.predictor = make_pred;
        po.future = &routing;
        auto policy = make_policy(name, po);
        rows.push_back({hw.name, mem, simulate(routing, *policy, tm, so)});
      }
    }
  }
  return rows;
}

std::string simulate_markdown(const std::vector<SimulateRow>& rows) {
  std::map<std::pair<std::string, int>, double> oracle;
  for (const auto& r : rows)
    if (r.result.policy == "oracle") oracle[{r.profile, r.result.batch}] = r.result.tokens_per_s();
  std::ostringstream s;
  s << "| profile | batch | policy | tokens/s | vs oracle | TPOT ms | hit rate | moved | io wait | host execs | "
       "pred. precision | pred. recall |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  char line[512];
  for (const auto& row : rows) {
    const SimResult& r = row.result;
    auto it = oracle.find({row.profile, r.batch});
    char rel[32] = "-";
    if (it != oracle.end() && it->second > 0) std::snprintf(rel, sizeof rel, "%.3f", r.tokens_per_s() / it->second);
    std::snprintf(line, sizeof line, "| %s | %d | %s | %.2f | %s | %.1f | %.3f | %s | %.1f%% | %llu | %.3f | %.3f |\n",
                  row.profile.c_str(), r.batch, r.policy.c_str(), r.tokens_per_s(), rel, r.tpot_ms(), r.hit_rate(),
                  format_bytes(static_cast<double>(r.bytes_moved)).c_str(), 100 * r.io_wait_fraction(),
                  static_cast<unsigned long long>(r.host_execs), r.prediction_precision(), r.prediction_recall());
    s << line;
  }
  return s.str();
}

void write_simulate_outputs(const std::vector<SimulateRow>& rows, const std::string& out_dir, const std::string& header) {
  make_dirs(out_dir);
  const fs::path dir(out_dir);
  {
    std::ofstream csv(dir / "simulate.csv");
    if (!csv) FERRY_THROW(IoError, "cannot write '", (dir / "simulate.csv").string(), "'");
    csv << "policy,batch,tokens_per_s,tpot_ms,hit_rate,bytes_moved,io_wait_fraction,prediction_precision,"
           "prediction_recall,profile,device_mem_bytes,capacity_experts,host_execs,prefetches,loads,planner_us,"
           "layer_compute_us\n";
    for (const auto& row : rows) {
      const SimResult& r = row.result;
      csv << r.policy << ',' << r.batch << ',' << r.tokens_per_s() << ',' << r.tpot_ms() << ',' << r.hit_rate() << ','
          << r.bytes_moved << ',' << r.io_wait_fraction() << ',' << r.prediction_precision() << ','
          << r.prediction_recall() << ',' << row.profile << ',' << row.device_mem_bytes << ',' << r.capacity_experts
          << ',' << r.host_execs << ',' << r.prefetches << ',' << r.loads << ',' << r.planner_s_per_plan * 1e6 << ','
          << r.device_layer_compute_s * 1e6 << '\n';
    }
  }
  {
    std::ofstream md(dir / "simulate.md");
    md << header << "\n\n" << simulate_markdown(rows);
  }
  // One panel per profile: tokens/s against batch, one line per policy.
  std::vector<std::string> profiles, policies;
  std::map<std::string, std::map<std::string, std::vector<std::pair<int, double>>>> series;
  for (const auto& row : rows) {
    if (std::find(profiles.begin(), profiles.end(), row.profile) == profiles.end()) profiles.push_back(row.profile);
    if (std::find(policies.begin(), policies.end(), row.result.policy) == policies.end())
      policies.push_back(row.result.policy);
    series[row.profile][row.result.policy].push_back({row.result.batch, row.result.tokens_per_s()});
  }
  std::ofstream gp(dir / "simulate.gp");
  gp << "set terminal pngcairo size " << 560 * profiles.size() << ",440 noenhanced\n"
     << "set output '" << (dir / "simulate.png").string() << "'\n"
     << "set multiplot layout 1," << profiles.size() << "\nset logscale x 2\nset logscale y\nset xlabel 'batch'\n"
     << "set ylabel 'decode tokens/s (simulated)'\nset key top left font ',9'\nset grid\n";
  for (const auto& p : profiles) {
    gp << "set title '" << p << "'\nplot ";
    for (std::size_t i = 0; i < policies.size(); ++i)
      gp << (i ? ", " : "") << "'-' using 1:2 with linespoints title '" << policies[i] << "'";
    gp << "\n";
    for (const auto& pol : policies) {
      for (auto [batch, tps] : series[p][pol]) gp << batch << ' ' << tps << '\n';
      gp << "e\n";
    }
  }
  gp << "unset multiplot\n";
  gp.close();
  const std::string cmd = "gnuplot '" + (dir / "simulate.gp").string() + "' 2>/dev/null";
  if (std::system("command -v gnuplot >/dev/null 2>&1") == 0 && std::system(cmd.c_str()) != 0)
    std::fprintf(stderr, "warning: gnuplot failed on %s\n", (dir / "simulate.gp").string().c_str());
}

}  // namespace ferry::moe
