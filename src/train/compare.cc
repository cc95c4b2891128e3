#include "train/compare.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "comm/link/link_options.h"
#include "compress/codec_registry.h"
#include "core/error.h"
#include "core/metrics.h"
#include "core/report.h"
#include "core/spec.h"
#include "train/strategy.h"

namespace ferry::train {
namespace {

std::string safe(std::string s) {
  for (auto& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.' && c != '_') c = '_';
  return s;
}

double num(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : NAN;
}

std::string fmt(double v, const char* f = "%.4g") { return format_cell(v, f); }

// Whether a codec spec compresses: "none", "none:ef=0" and any other identity codec do not (the
// registry says which, no name is compared here).
bool compresses(const std::string& codec) { return !compress::codec_entry(codec).identity; }
// A run's label: the algorithm, then `sep` and the codec when it compresses.
std::string label_of(const std::string& algo, const std::string& codec, const char* sep) {
  return compresses(codec) ? algo + sep + codec : algo;
}

}  // namespace

std::vector<CompareConfig> compare_plan(const std::vector<std::string>& algos, const std::vector<std::string>& codecs,
                                        const std::vector<std::string>& links) {
  register_builtin_strategies();
  std::vector<std::string> all = algos;
  const std::string& floor = compute_floor_strategy().name;
  if (std::find(all.begin(), all.end(), floor) == all.end()) all.push_back(floor);
  std::vector<std::string> compressing;
  for (const auto& c : codecs)
    if (compresses(c)) compressing.push_back(c);
  std::vector<CompareConfig> plan;
  for (const auto& link : links) {
    for (const auto& algo : all) {
      const StrategyInfo& info = strategy_info(algo);  // unknown names are errors here
      bool ps = false;
      for (auto t : info.topologies) ps |= t == Topology::kParameterServer;
      std::vector<std::string> mine;
      if (!info.takes_codec)
        mine = {"none"};
      else if (info.needs_codec)  // its default codec by name: the codec's own default options
        mine = compressing.empty() ? std::vector<std::string>{Spec::name_of(default_codec(info.name))} : compressing;
      else
        mine = codecs.empty() ? std::vector<std::string>{"none"} : codecs;
      for (const auto& codec : mine) {
        CompareConfig c{algo, codec, ps ? "ps" : "allreduce", link, ""};
        c.name = safe(label_of(algo, codec, "-") + "@" + link);
        plan.push_back(c);
      }
    }
  }
  return plan;
}

std::string compare_run_codec(const std::string& codec, const std::vector<SpecShorthand>& shorthands) {
  register_builtin_strategies();
  for (const auto& name : strategy_names()) {
    const StrategyInfo& info = strategy_info(name);
    if (!info.default_codec) continue;
    std::string spec = info.default_codec(fold_shorthands(name, shorthands));
    if (codec == Spec::name_of(spec)) return spec;
  }
  return codec;
}

std::string QualityTarget::describe() const {
  return perplexity ? "test perplexity " + fmt(value, "%.2f") : "test accuracy " + fmt(100 * value, "%.1f") + " %";
}

void load_compare_result(const std::string& dir, const QualityTarget& target, CompareResult& r) {
  std::ifstream s(dir + "/summary.json");
  if (s) r.summary = nlohmann::json::parse(s, nullptr, false);
  if (r.summary.is_discarded()) r.summary = nlohmann::json();
  std::ifstream m(dir + "/metrics.jsonl");
  std::string line;
  while (std::getline(m, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.contains("test_acc")) continue;
    r.quality.emplace_back(num(j, "t"), target.perplexity ? std::exp(num(j, "test_loss")) : num(j, "test_acc"));
  }
}

double time_to_target(const CompareResult& r, const QualityTarget& target) {
  for (const auto& [t, q] : r.quality)
    if (target.reached(q)) return t;
  return NAN;
}

CompareReport write_compare_report(const std::string& out, const std::vector<CompareResult>& results,
                                   const QualityTarget& target) {
  // Baselines per link: ssgd without codec (speedup), compute-only (iteration-time floor).
  register_builtin_strategies();
  std::map<std::string, double> ssgd_sps, floor_iter_s;
  std::vector<std::string> links;
  auto iter_s = [](const CompareResult& r) {
    return num(r.summary, "wall_s") / std::max(1.0, num(r.summary, "iterations"));
  };
  for (const auto& r : results) {
    if (std::find(links.begin(), links.end(), r.config.link) == links.end()) links.push_back(r.config.link);
    const StrategyInfo* info = find_strategy(r.config.algo);
    if (info == nullptr) continue;  // not a baseline
    if (info->speedup_baseline && !compresses(r.config.codec)) ssgd_sps[r.config.link] = num(r.summary, "samples_per_s");
    if (info->compute_floor) floor_iter_s[r.config.link] = iter_s(r);
  }
  auto lookup = [](const std::map<std::string, double>& m, const std::string& k) {
    auto it = m.find(k);
    return it == m.end() ? NAN : it->second;
  };

  ReportTable csv({{"link"}, {"algo"}, {"codec"}, {"topology"}, {"samples_per_s"}, {"speedup_vs_ssgd"},
                   {"time_to_target_s"}, {target.perplexity ? "final_test_perplexity" : "final_test_acc"}, {"bytes_sent_per_worker"}, {"comm_wait_fraction"},
                   {"iteration_ms"}, {"iteration_vs_compute_only"}, {"wall_s"}, {"exit_code"}});
  std::vector<ReportColumn> md_columns = {{"link"}, {"algo"}, {"codec"}};
  for (const char* name : {"samples/s", "speedup vs ssgd", "", "", "MB sent/worker", "comm wait %",
                           "iteration vs compute-only"})
    md_columns.push_back({name, MdAlign::kRight});
  md_columns[5].name = target.perplexity ? "time to ppl " + fmt(target.value, "%.2f") + " (s)"
                                         : "time to " + fmt(100 * target.value, "%.1f") + " % (s)";
  md_columns[6].name = target.perplexity ? "final ppl" : "final acc %";
  ReportTable md(std::move(md_columns));
  for (const auto& r : results) {
    const auto& c = r.config;
    const double sps = num(r.summary, "samples_per_s");
    const double speedup = sps / lookup(ssgd_sps, c.link);
    const double ttt = time_to_target(r, target);
    const double quality = target.perplexity ? std::exp(num(r.summary, "test_loss")) : num(r.summary, "test_acc");
    const double bytes = num(r.summary, "bytes_sent_per_worker");
    const double wait = num(r.summary, "comm_wait_fraction");
    const double it = iter_s(r);
    const double vs_floor = it / lookup(floor_iter_s, c.link);
    csv.add_row({c.link, c.algo, c.codec, c.topology, fmt(sps, "%.6g"), fmt(speedup), fmt(ttt), fmt(quality),
                 fmt(bytes, "%.0f"), fmt(wait), fmt(1e3 * it), fmt(vs_floor), fmt(num(r.summary, "wall_s")),
                 std::to_string(r.exit_code)});
    md.add_row({c.link, c.algo, c.codec, fmt(sps, "%.0f"), fmt(speedup, "%.2f"),
                std::isnan(ttt) ? "not reached" : fmt(ttt, "%.1f"), target.perplexity ? fmt(quality, "%.2f") : fmt(100 * quality, "%.2f"), fmt(bytes / 1e6, "%.1f"),
                fmt(100 * wait, "%.0f"), fmt(vs_floor, "%.2f")});
  }
  write_report_file(out + "/compare.csv", csv.csv());
  std::ostringstream head;
  head << "# ferry compare\n\nTarget " << target.describe()
       << " (time to target: first evaluation — per epoch, or every --eval-every iterations — that reaches it, "
          "training seconds).\n\n";
  write_report_file(out + "/compare.md", head.str() + md.markdown());

  // Plot data: quality curves and samples/s of the first link; speedup against bandwidth.
  const char* quality_name = target.perplexity ? "test perplexity" : "test accuracy";
  std::ostringstream gp, bars;
  gp << "set terminal pngcairo size 1000,600\nset datafile separator ','\nset key outside right\n";
  gp << "set output '" << out << (target.perplexity ? "/perplexity" : "/accuracy") << "_vs_time.png'\nset title '" << quality_name << " vs training time ("
     << links[0] << ")'\nset xlabel 'training seconds'\nset ylabel '" << quality_name << "'\nplot ";
  bool first = true;
  int index = 0;
  for (const auto& r : results) {
    if (r.config.link != links[0]) continue;
    const std::string dat = out + "/acc_" + r.config.name + ".dat";
    std::ostringstream d;
    for (const auto& [t, q] : r.quality) d << t << ',' << q << '\n';
    write_report_file(dat, d.str());
    gp << (first ? "" : ", ") << "'" << dat << "' using 1:2 with linespoints title '"
       << label_of(r.config.algo, r.config.codec, "+") << "'";
    first = false;
    bars << index++ << ',' << label_of(r.config.algo, r.config.codec, "+") << ','
         << fmt(num(r.summary, "samples_per_s"), "%.6g") << '\n';
  }
  // The target as a dashed line (a plotted constant, so that the y range includes it): time to
  // target is where a curve first crosses it.
  gp << ", " << target.value << " with lines dashtype 2 linewidth 2 linecolor rgb '#c00000' title 'target "
     << (target.perplexity ? fmt(target.value, "%.2f") : fmt(100 * target.value, "%.1f") + " %") << "'";
  write_report_file(out + "/samples_per_s.dat", bars.str());
  // A log scale: the compute-only bound is many times the communicating runs, which a linear axis
  // squeezes to the floor; each bar is labelled with its value.
  gp << "\nset output '" << out << "/samples_per_s.png'\nset title 'throughput ("
     << links[0] << ", log scale)'\nset style fill solid 0.6\nset boxwidth 0.7\nset xtics rotate by -35\n"
     << "set xlabel ''\nset logscale y\nset ylabel 'samples/s'\nunset key\nplot '" << out
     << "/samples_per_s.dat' using 1:3:xtic(2) with boxes, '' using 1:3:(sprintf('%.0f', $3)) with labels offset 0,0.8\n"
     << "unset logscale y\n";
  if (links.size() > 1) {
    gp << "set output '" << out << "/speedup_vs_bandwidth.png'\nset title 'samples/s relative to ssgd'\n"
       << "set logscale x\nset xlabel 'link bandwidth (Gbit/s)'\nset ylabel 'speedup vs ssgd'\nset key outside right\n"
       << "set xtics norotate\nplot ";
    std::map<std::string, std::ostringstream> series;
    std::vector<std::string> order;
    for (const auto& r : results) {
      std::string label = label_of(r.config.algo, r.config.codec, "+");
      if (!series.count(label)) order.push_back(label);
      const double gbps = comm::parse_link_spec(r.config.link).bandwidth_bytes_per_s * 8 / 1e9;
      series[label] << gbps << ',' << fmt(num(r.summary, "samples_per_s") / lookup(ssgd_sps, r.config.link)) << '\n';
    }
    for (std::size_t i = 0; i < order.size(); ++i) {
      write_report_file(out + "/speedup_" + safe(order[i]) + ".dat", series[order[i]].str());
      gp << (i ? ", " : "") << "'" << out << "/speedup_" << safe(order[i]) << ".dat' using 1:2 with linespoints title '"
         << order[i] << "'";
    }
    gp << '\n';
  }
  write_report_file(out + "/plots.gp", gp.str());
  return {md.markdown(), {PlotScript{out + "/plots.gp", out + "/gnuplot.log"}}};
}

}  // namespace ferry::train
