#include "advise/advise.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>
#include <sstream>

#include "compress/codec_registry.h"
#include "core/error.h"
#include "core/units.h"

namespace ferry::advise {
namespace {

const train::StrategyInfo& baseline() {
  for (const auto& n : train::strategy_names())
    if (const auto& info = train::strategy_info(n); info.speedup_baseline) return info;
  FERRY_THROW(InternalError, "no strategy is the speedup baseline");
}

std::string fmt(double v, const char* f) { return format_cell(v, f); }

// The codecs `info` runs with, from the list (as `ferry compare` pairs them).
std::vector<std::string> codecs_for(const train::StrategyInfo& info, const AdviseOptions& o) {
  const std::string none = compress::canonical_codec_spec("none");
  if (!info.takes_codec) return {none};
  std::vector<std::string> out;
  for (const auto& c : o.codecs) {
    const std::string canonical = compress::canonical_codec_spec(c);
    if (info.needs_codec && canonical == none) continue;
    out.push_back(canonical);
  }
  if (info.needs_codec && out.empty())
    out.push_back(compress::canonical_codec_spec(train::default_codec(train::fold_shorthands(info.name, o.shorthands))));
  return out;
}

}  // namespace

std::vector<AdviseRow> advise(const AdviseOptions& o, ProfileBook& book, const MachineConstants& k) {
  train::register_builtin_strategies();
  FERRY_REQUIRE(!o.workers.empty(), "--workers needs at least one count");
  for (int w : o.workers) FERRY_REQUIRE_OP(w, >=, 1, "--workers: every count");
  FERRY_REQUIRE_OP(o.servers, >=, 1, "--servers");
  FERRY_REQUIRE(!o.bandwidths.empty(), "--bandwidth needs at least one value");
  for (double b : o.bandwidths) FERRY_REQUIRE_OP(b, >, 0, "--bandwidth");
  FERRY_REQUIRE_OP(o.latency_s, >=, 0, "--latency");
  for (const auto& name : train::strategy_names()) train::fold_shorthands(name, o.shorthands);  // a bad value first
  FERRY_REQUIRE_OP(o.steps, >=, 0, "--steps");
  const train::StrategyInfo& base = baseline();
  std::vector<AdviseRow> rows;
  std::set<std::string> left_out;
  for (int w : o.workers) {
    const int servers = o.workers_per_server > 0 ? std::max(1, w / o.workers_per_server) : o.servers;
    for (double bw : o.bandwidths) {
      std::vector<AdviseRow> group;
      for (const auto& name : train::strategy_names()) {
        const auto& info = train::strategy_info(name);
        if (!find_algorithm_cost(name)) {
          std::fprintf(stderr, "ferry advise: --algo %s has no cost model, left out\n", name.c_str());
          continue;
        }
        for (auto topo : info.topologies)
          for (const auto& spec : codecs_for(info, o)) {
            AdviseRow r{name, train::topology_name(topo), spec, w, topo == train::Topology::kParameterServer ? servers : 0,
                        bw, {}, 0};
            const ScenarioSpec row = spec_of_row(o, r);
            const Scenario sc = make_scenario(row, book);  // a bad model or device: the user's error
            try {
              r.prediction = predict(row.algo, sc, k);
            } catch (const InvalidArgument& e) {  // what the strategy itself refuses on this model
              if (left_out.insert(name).second)
                std::fprintf(stderr, "ferry advise: --algo %s left out: %s\n", name.c_str(), e.what());
              continue;
            }
            group.push_back(r);
          }
      }
      // Speedup over the baseline, fp32, on its best topology (S-SGD as one would run it),
      // whether or not --codecs lists none.
      double ref = 0;
      for (auto topo : base.topologies) {
        AdviseRow b{base.name, train::topology_name(topo), compress::canonical_codec_spec("none"), w,
                    topo == train::Topology::kParameterServer ? servers : 0, bw, {}, 0};
        ref = std::max(ref, predict_spec(spec_of_row(o, b), book, k).samples_per_s);
      }
      FERRY_CHECK(ref > 0, "no prediction of ", base.name);
      for (auto& r : group) r.speedup = r.prediction.samples_per_s / ref;
      std::stable_sort(group.begin(), group.end(), [](const AdviseRow& a, const AdviseRow& b) {
        return a.prediction.samples_per_s > b.prediction.samples_per_s;
      });
      rows.insert(rows.end(), group.begin(), group.end());
    }
  }
  return rows;
}

ScenarioSpec spec_of_row(const AdviseOptions& o, const AdviseRow& r) {
  ScenarioSpec s;
  s.algo = train::fold_shorthands(r.algo, o.shorthands);
  s.model = o.model;
  s.device = o.device;
  s.batch = o.batch;
  s.workers = r.workers;
  s.servers = r.servers;
  s.topology = train::parse_topology(r.topology);
  s.bandwidth_bytes_per_s = r.bandwidth_bytes_per_s;
  s.latency_s = o.latency_s;
  s.codec = r.codec;
  s.steps = o.steps;
  return s;
}

ReportTable advise_table(const std::vector<AdviseRow>& rows, int workers, double bandwidth) {
  ReportTable t({{"rank"}, {"algo"}, {"topology"}, {"codec"}, {"samples/s", MdAlign::kRight},
                 {"speedup vs ssgd", MdAlign::kRight}, {"MB/iteration/worker", MdAlign::kRight},
                 {"comm %", MdAlign::kRight}, {"iteration ms", MdAlign::kRight}});
  int rank = 0;
  for (const auto& r : rows) {
    if (r.workers != workers || r.bandwidth_bytes_per_s != bandwidth) continue;
    t.add_row({std::to_string(++rank), r.algo, r.topology, r.codec, fmt(r.prediction.samples_per_s, "%.0f"),
               fmt(r.speedup, "%.2f"), fmt(r.prediction.bytes_per_iteration / 1e6, "%.3f"),
               fmt(100 * r.prediction.comm_fraction, "%.0f"), fmt(1e3 * r.prediction.iteration_s, "%.2f")});
  }
  return t;
}

ReportTable advise_csv(const std::vector<AdviseRow>& rows) {
  ReportTable t = ReportTable::of({"workers", "servers", "bandwidth_bytes_per_s", "algo", "topology", "codec", "steps",
                                   "samples_per_s", "speedup_vs_ssgd", "bytes_per_iteration_per_worker",
                                   "comm_fraction", "iteration_s"});
  for (const auto& r : rows)
    t.add_row({std::to_string(r.workers), std::to_string(r.servers), printf_cell(r.bandwidth_bytes_per_s, "%.6g"), r.algo,
               r.topology, r.codec, std::to_string(r.prediction.steps), printf_cell(r.prediction.samples_per_s, "%.6g"), printf_cell(r.speedup, "%.4g"),
               printf_cell(r.prediction.bytes_per_iteration, "%.6g"), printf_cell(r.prediction.comm_fraction, "%.4g"),
               printf_cell(r.prediction.iteration_s, "%.6g")});
  return t;
}

std::vector<PlotScript> advise_plots(const std::vector<AdviseRow>& rows, const AdviseOptions& o, const std::string& dir) {
  std::vector<PlotScript> out;
  auto series = [](const AdviseRow& r) {
    const std::string codec = compress::CodecSpec::parse(r.codec, "codec").name;
    return r.algo + " (" + r.topology + (r.codec == compress::canonical_codec_spec("none") ? "" : ", " + codec) + ")";
  };
  // One speedup plot: `settings` names the x axis, `name` the files (NAME.gp, NAME.png).
  auto write_plot = [&](const PanelChart& chart, const std::string& settings, const std::string& against,
                        const std::string& name) {
    PanelChart::Style style;
    style.panel_width = 900;
    style.height = 560;
    style.settings = settings + "set ylabel 'predicted speedup over S-SGD'\nset key outside right\n";
    style.title_prefix = "ferry advise: speedup against " + against + ", ";
    const std::string gp = dir + "/" + name + ".gp";
    write_report_file(gp, chart.gnuplot(dir + "/" + name + ".png", style));
    out.push_back({gp, ""});
  };
  if (o.workers.size() > 1) {
    PanelChart chart;
    for (const auto& r : rows)
      if (r.bandwidth_bytes_per_s == o.bandwidths.front())
        chart.add("at " + format_bandwidth(r.bandwidth_bytes_per_s), series(r), r.workers, r.speedup);
    write_plot(chart, "set logscale x 2\nset xlabel 'workers'\n", "workers", "speedup_vs_workers");
  }
  if (o.bandwidths.size() > 1) {
    PanelChart chart;
    for (const auto& r : rows)
      if (r.workers == o.workers.front())
        chart.add(std::to_string(r.workers) + " workers", series(r), r.bandwidth_bytes_per_s * 8 / 1e9, r.speedup);
    write_plot(chart, "set logscale x 10\nset xlabel 'bandwidth (Gbps)'\n", "bandwidth", "speedup_vs_bandwidth");
  }
  return out;
}

std::vector<ValidationRow> validate_runs(const std::vector<RunRecord>& runs, ProfileBook& book, const MachineConstants& k) {
  std::vector<ValidationRow> out;
  for (const auto& r : runs) {
    try {
      ValidationRow v{r, predict_spec(spec_of(r), book, k), 0};
      v.error = (v.prediction.samples_per_s - r.samples_per_s) / r.samples_per_s;
      out.push_back(v);
    } catch (const InvalidArgument& e) {
      std::fprintf(stderr, "ferry advise: run %s left out: %s\n", r.dir.c_str(), e.what());
    }
  }
  return out;
}

ErrorSummary summarize_errors(const std::vector<ValidationRow>& rows, const std::string& set) {
  std::vector<double> e;
  for (const auto& r : rows)
    if (set.empty() || r.run.set == set) e.push_back(std::fabs(r.error));
  ErrorSummary s;
  s.runs = static_cast<int>(e.size());
  if (e.empty()) return s;
  std::sort(e.begin(), e.end());
  s.median_abs = e.size() % 2 ? e[e.size() / 2] : 0.5 * (e[e.size() / 2 - 1] + e[e.size() / 2]);
  s.worst_abs = e.back();
  return s;
}

ReportTable validation_table(const std::vector<ValidationRow>& rows) {
  ReportTable t({{"set"}, {"run"}, {"algo"}, {"topology"}, {"model"}, {"np", MdAlign::kRight},
                 {"servers", MdAlign::kRight}, {"link"}, {"codec"}, {"measured samples/s", MdAlign::kRight},
                 {"predicted samples/s", MdAlign::kRight}, {"error %", MdAlign::kRight},
                 {"measured comm %", MdAlign::kRight}, {"predicted comm %", MdAlign::kRight}});
  for (const auto& r : rows)
    t.add_row({r.run.set, std::filesystem::path(r.run.dir).filename().string(), r.run.algo, r.run.topology, r.run.model,
               std::to_string(r.run.workers), std::to_string(r.run.servers), r.run.link, r.run.codec,
               fmt(r.run.samples_per_s, "%.0f"), fmt(r.prediction.samples_per_s, "%.0f"), fmt(100 * r.error, "%+.1f"),
               fmt(100 * r.run.comm_wait_fraction, "%.0f"), fmt(100 * r.prediction.comm_fraction, "%.0f")});
  return t;
}

std::vector<PlotScript> validation_plots(const std::vector<ValidationRow>& rows, const std::string& dir) {
  std::ostringstream gp;
  double hi = 1;
  for (const auto& r : rows) hi = std::max({hi, r.run.samples_per_s, r.prediction.samples_per_s});
  gp << "set terminal pngcairo size 760,640 noenhanced\nset output '" << dir << "/predicted_vs_measured.png'\n"
     << "set logscale xy\nset xlabel 'measured samples/s'\nset ylabel 'predicted samples/s'\n"
     << "set title 'ferry advise against measured runs'\nset key top left\nset xrange [5:" << hi * 1.5 << "]\nset yrange [5:"
     << hi * 1.5 << "]\n";
  std::set<std::string> sets;
  for (const auto& r : rows) sets.insert(r.run.set.empty() ? "runs" : r.run.set);
  gp << "plot x with lines dt 2 lc rgb 'gray' title 'predicted = measured', x*1.25 with lines dt 3 lc rgb 'gray' title "
        "'+-25 %', x/1.25 with lines dt 3 lc rgb 'gray' notitle";
  for (const auto& s : sets) gp << ", '-' using 1:2 with points pt 7 ps 1.2 title '" << s << "'";
  gp << "\n";
  for (const auto& s : sets) {
    for (const auto& r : rows)
      if ((r.run.set.empty() ? "runs" : r.run.set) == s) gp << r.run.samples_per_s << " " << r.prediction.samples_per_s << "\n";
    gp << "e\n";
  }
  const std::string path = dir + "/predicted_vs_measured.gp";
  write_report_file(path, gp.str());
  return {{path, ""}};
}

MachineConstants calibrate(const std::vector<RunRecord>& runs, ProfileBook& book, const MachineConstants& start, int* used) {
  bool marked = false;
  for (const auto& r : runs) marked = marked || r.set == "calibration";
  std::vector<CalibrationPoint> pts;
  for (const auto& r : runs) {
    if (marked && r.set != "calibration") continue;
    try {
      pts.push_back({r.algo, make_scenario(spec_of(r), book), r.samples_per_s});
      predict(r.algo, pts.back().scenario, start);  // refuses what cannot be predicted
    } catch (const InvalidArgument& e) {
      if (!pts.empty() && pts.back().algo == r.algo) pts.pop_back();
      std::fprintf(stderr, "ferry advise: calibration run %s left out: %s\n", r.dir.c_str(), e.what());
    }
  }
  if (used) *used = static_cast<int>(pts.size());
  return fit_constants(pts, start);
}

}  // namespace ferry::advise
