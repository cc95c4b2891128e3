// Codec throughput benchmark, in the spirit of llama-bench: for every codec spec and tensor
// size, single-thread encode / decode / decode_add throughput in GB/s of fp32 input, next to
// memcpy bandwidth measured in the same run (again next to every codec; each ratio uses the
// memcpy measured just before that codec), with warm-up and repetitions (median reported).
// Writes codecs.csv, codecs.json, codecs.gp and codecs.png (gnuplot) to --out and prints a
// markdown table. Benchmarks are programs, not tests: nothing here asserts a speed.
//
//   bench_codecs [--sizes 1000000,25000000] [--codecs SPEC;SPEC...] [--reps 5] [--warmup 1]
//                [--out runs/bench_codecs]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "apps/render_plots.h"
#include "compress/codec_registry.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/metrics.h"
#include "core/report.h"

namespace {

using ferry::compress::Codec;
using ferry::compress::TensorInfo;

struct Timing {
  double median_s = 0;
  double min_s = 0;
};

// Runs fn warmup times, then reps times; returns the median and min wall time per call.
Timing measure(int warmup, int reps, const std::function<void()>& fn) {
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    ferry::Stopwatch sw;
    fn();
    t.push_back(sw.elapsed_s());
  }
  std::sort(t.begin(), t.end());
  return {t[t.size() / 2], t.front()};
}

// A near-square 2-D shape for n, so PowerSGD compresses it like a weight matrix.
std::vector<std::int64_t> matrix_shape(std::size_t n) {
  auto rows = static_cast<std::size_t>(std::sqrt(static_cast<double>(n)));
  while (rows > 1 && n % rows != 0) --rows;
  return {static_cast<std::int64_t>(rows), static_cast<std::int64_t>(n / rows)};
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, sep))
    if (!item.empty()) out.push_back(item);
  return out;
}

struct Row {
  std::size_t numel;
  std::string spec;
  std::string op;  // encode, decode, decode_add, memcpy
  Timing t;
  double gbps;
  double ratio_to_memcpy;
  std::size_t payload_bytes;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ferry codec throughput benchmark (single thread)"};
  std::string sizes_text = "1000000,25000000";
  std::string codecs_text =
      "none;fp16;twobit:threshold=0.5;onebit;qsgd;terngrad;topk:ratio=0.01;topk:ratio=0.01,ef=0;"
      "randomk:ratio=0.01;dgc:ratio=0.001;powersgd:rank=4";
  int reps = 5, warmup = 1;
  std::string out_dir = "runs/bench_codecs";
  app.add_option("--sizes", sizes_text, "comma-separated tensor sizes (elements)");
  app.add_option("--codecs", codecs_text, "semicolon-separated codec specs");
  app.add_option("--reps", reps, "timed repetitions (median reported)")->check(CLI::PositiveNumber);
  app.add_option("--warmup", warmup, "untimed warm-up runs")->check(CLI::NonNegativeNumber);
  app.add_option("--out", out_dir, "output directory for CSV, JSON and plot");
  CLI11_PARSE(app, argc, argv);

  std::string command;
  for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);

  try {
    std::vector<std::size_t> sizes;
    for (const auto& s : split(sizes_text, ',')) sizes.push_back(std::stoull(s));
    const auto specs = split(codecs_text, ';');
    for (const auto& s : specs) ferry::compress::canonical_codec_spec(s);  // fail fast
    ferry::make_dirs(out_dir);

    std::vector<Row> rows;
    for (std::size_t n : sizes) {
      std::vector<float> grad(n), out(n), acc(n, 0.0f), dst(n);
      std::mt19937 gen(1);
      std::normal_distribution<float> dist(0.0f, 1.0f);
      for (auto& x : grad) x = dist(gen);
      // memcpy of the same bytes (pages already faulted in), measured again next to every
      // codec: the machine is shared, so each ratio uses the memcpy bandwidth of its moment.
      auto measure_memcpy = [&] {
        const Timing t = measure(warmup + 1, reps, [&] { std::memcpy(dst.data(), grad.data(), 4 * n); });
        return 4.0 * n / t.median_s / 1e9;
      };
      std::vector<double> memcpy_samples;
      const std::size_t memcpy_row = rows.size();
      rows.push_back({n, "memcpy", "memcpy", {}, 0.0, 1.0, 4 * n});
      for (const auto& spec : specs) {
        const double memcpy_gbps = measure_memcpy();
        memcpy_samples.push_back(memcpy_gbps);
        TensorInfo info{.numel = n, .shape = matrix_shape(n)};
        std::unique_ptr<Codec> codec = ferry::compress::make_codec(spec, info);
        std::vector<std::byte> payload;
        payload.reserve(codec->encoded_size_bytes());
        const Timing te = measure(warmup, reps, [&] { codec->encode(grad, payload); });
        const Timing td = measure(warmup, reps, [&] { codec->decode(payload, out); });
        const Timing ta = measure(warmup, reps, [&] { codec->decode_add(payload, acc); });
        for (auto [op, t] : {std::pair{"encode", te}, std::pair{"decode", td}, std::pair{"decode_add", ta}}) {
          const double gbps = 4.0 * n / t.median_s / 1e9;
          rows.push_back({n, spec, op, t, gbps, gbps / memcpy_gbps, payload.size()});
        }
        std::fprintf(stderr,
                     "n=%zu %-28s encode %7.2f  decode %7.2f  decode_add %7.2f GB/s  (%zu bytes; "
                     "memcpy %.2f GB/s)\n",
                     n, spec.c_str(), rows[rows.size() - 3].gbps, rows[rows.size() - 2].gbps,
                     rows.back().gbps, payload.size(), memcpy_gbps);
      }
      std::sort(memcpy_samples.begin(), memcpy_samples.end());
      const double memcpy_median = memcpy_samples[memcpy_samples.size() / 2];
      rows[memcpy_row].gbps = memcpy_median;
      rows[memcpy_row].t.median_s = 4.0 * n / memcpy_median / 1e9;
      rows[memcpy_row].t.min_s = 4.0 * n / memcpy_samples.back() / 1e9;
    }

    // CSV + JSON (the codec column is always quoted: specs hold commas).
    ferry::ReportTable csv({{"numel"}, {"codec", ferry::MdAlign::kLeft, ferry::CsvQuote::kAlways}, {"op"},
                            {"median_s"}, {"min_s"}, {"gbps"}, {"ratio_to_memcpy"}, {"payload_bytes"},
                            {"compression"}});
    nlohmann::json results = nlohmann::json::array();
    for (const auto& r : rows) {
      const double compression = 4.0 * r.numel / static_cast<double>(r.payload_bytes);
      using ferry::stream_cell;
      csv.add_row({stream_cell(r.numel), r.spec, r.op, stream_cell(r.t.median_s), stream_cell(r.t.min_s),
                   stream_cell(r.gbps), stream_cell(r.ratio_to_memcpy), stream_cell(r.payload_bytes),
                   stream_cell(compression)});
      results.push_back({{"numel", r.numel},
                         {"codec", r.spec},
                         {"op", r.op},
                         {"median_s", r.t.median_s},
                         {"min_s", r.t.min_s},
                         {"gbps", r.gbps},
                         {"ratio_to_memcpy", r.ratio_to_memcpy},
                         {"payload_bytes", r.payload_bytes},
                         {"compression", compression}});
    }
    ferry::write_report_file(out_dir + "/codecs.csv", csv.csv());
    ferry::write_json_file(out_dir + "/codecs.json",
                           {{"command", command},
                            {"threads", 1},
                            {"reps", reps},
                            {"warmup", warmup},
                            {"unit", "GB/s of fp32 input (1e9 bytes/s); memcpy: bytes copied/s"},
                            {"results", results}});

    // Markdown table: one line per (size, codec).
    std::vector<ferry::ReportColumn> md_columns;
    for (const char* name : {"elements", "codec", "encode GB/s", "x memcpy", "decode GB/s", "x memcpy",
                             "decode_add GB/s", "payload bytes", "compression"})
      md_columns.push_back({name, std::string(name) == "codec" ? ferry::MdAlign::kLeft : ferry::MdAlign::kRight});
    ferry::ReportTable md(std::move(md_columns));
    for (std::size_t i = 0; i < rows.size(); ++i) {
      using ferry::printf_cell;
      const auto& r = rows[i];
      const std::string n = std::to_string(r.numel);
      if (r.op == "memcpy") {
        md.add_row({n, "**memcpy** (median of runs next to each codec)", printf_cell(r.gbps, "%.2f"), "1.00", "", "",
                    "", "", ""});
      } else if (r.op == "encode") {
        const auto& d = rows[i + 1];
        const auto& a = rows[i + 2];
        md.add_row({n, "`" + r.spec + "`", printf_cell(r.gbps, "%.2f"), printf_cell(r.ratio_to_memcpy, "%.2f"),
                    printf_cell(d.gbps, "%.2f"), printf_cell(d.ratio_to_memcpy, "%.2f"), printf_cell(a.gbps, "%.2f"),
                    std::to_string(r.payload_bytes), printf_cell(4.0 * r.numel / r.payload_bytes, "%.1fx")});
      }
    }
    std::printf("%s", md.markdown().c_str());

    // Targets of the compression issue: twobit encode (residual included) >= 40% of memcpy,
    // topk 1% (error feedback on, the default) >= 10% of memcpy.
    std::printf("\n| target | elements | encode x memcpy | met |\n|---|---:|---:|---|\n");
    for (const auto& r : rows) {
      if (r.op != "encode") continue;
      double target = 0;
      if (r.spec.rfind("twobit", 0) == 0) target = 0.40;
      if (r.spec == "topk:ratio=0.01" || r.spec == "topk:ratio=0.01,ef=1") target = 0.10;
      if (target == 0) continue;
      std::printf("| `%s` encode >= %.0f%% of memcpy | %zu | %.2f | %s |\n", r.spec.c_str(),
                  100 * target, r.numel, r.ratio_to_memcpy, r.ratio_to_memcpy >= target ? "yes" : "**no**");
    }

    // Plot: one panel per size, clustered bars (encode, decode, decode_add), memcpy as a line.
    std::ostringstream gp;
    gp << "set terminal pngcairo size 1400," << 450 * sizes.size() << " font ',10'\n"
       << "set output '" << out_dir << "/codecs.png'\n"
       << "set datafile separator ','\nset style data histograms\n"
       << "set style histogram clustered gap 1\nset style fill solid 0.8 border -1\n"
       << "set ylabel 'GB/s of fp32 input (log)'\nset logscale y\nset yrange [0.01:*]\n"
       << "set xtics rotate by -30 noenhanced\nset grid ytics\nset key top right\n"
       << "set multiplot layout " << sizes.size() << ",1\n";
    for (std::size_t n : sizes) {
      const std::string dat = out_dir + "/codecs_" + std::to_string(n) + ".dat";
      std::ostringstream d;
      double memcpy_gbps = 0;
      for (std::size_t i = 0; i < rows.size(); ++i) {
        if (rows[i].numel != n) continue;
        if (rows[i].op == "memcpy") memcpy_gbps = rows[i].gbps;
        if (rows[i].op == "encode")
          d << ferry::csv_field(rows[i].spec, ferry::CsvQuote::kAlways) << "," << rows[i].gbps << ","
            << rows[i + 1].gbps << "," << rows[i + 2].gbps << "\n";
      }
      ferry::write_report_file(dat, d.str());
      gp << "set title 'single-thread codec throughput, " << n << " elements (memcpy "
         << memcpy_gbps << " GB/s)' noenhanced\n"
         << "plot '" << dat << "' using 2:xtic(1) title 'encode', '' using 3 title 'decode', "
         << "'' using 4 title 'decode\\_add', " << memcpy_gbps << " with lines lw 2 lc 'black' title 'memcpy', "
         << 0.4 * memcpy_gbps << " with lines dt 2 lc 'red' title '40% memcpy', "
         << 0.1 * memcpy_gbps << " with lines dt 3 lc 'blue' title '10% memcpy'\n";
    }
    gp << "unset multiplot\n";
    ferry::write_report_file(out_dir + "/codecs.gp", gp.str());
    if (!ferry::apps::render_plots({ferry::PlotScript{out_dir + "/codecs.gp", ""}}, "bench_codecs"))
      std::fprintf(stderr, "gnuplot not found: plot script written to %s/codecs.gp\n", out_dir.c_str());
    std::fprintf(stderr, "wrote %s/codecs.{csv,json,gp,png}\n", out_dir.c_str());
  } catch (const ferry::InvalidArgument& e) {
    std::fprintf(stderr, "bench_codecs: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_codecs: %s\n", e.what());
    return 1;
  }
  return 0;
}
