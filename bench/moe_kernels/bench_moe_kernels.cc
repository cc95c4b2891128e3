// One routed expert's call — y = w2·(act(w1·x) ⊙ w3·x) for a batch of tokens — as the engine runs
// it (moe/engine/expert_call.h), per weight format (float32 through libtorch, float32 and every
// block format through ferry's kernels, moe/quant/matmul.h), batch and thread count. Decode at
// batch 1 is a read of every weight once, so its speed limit is memory bandwidth: the roofline is
// this machine's measured read bandwidth (a sum over a buffer larger than the caches, same threads),
// and each row reports the fraction of it the call reached (weight bytes / time / bandwidth).
// Writes kernels.csv, kernels.json, kernels.gp and kernels.png to --out.
#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <torch/types.h>
#include <torch/utils.h>

#include "apps/render_plots.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/report.h"
#include "moe/engine/expert_call.h"
#include "moe/quant/matmul.h"
#include "moe/quant/quantize.h"

namespace {

using namespace ferry;
namespace quant = ferry::moe::quant;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Read bandwidth with `threads` threads: a float sum over 1 GiB (well past the caches).
double read_bandwidth_Bps(int threads) {
  at::set_num_threads(threads);
  const std::size_t n = (std::size_t{1} << 30) / sizeof(float);
  std::vector<float> buf(n, 1.0f);
  std::vector<double> t;
  for (int rep = 0; rep < 5; ++rep) {
    std::vector<float> part(static_cast<std::size_t>(threads) * 16, 0.0f);
    const double t0 = now_s();
    at::parallel_for(0, static_cast<std::int64_t>(n), 1 << 20, [&](std::int64_t b, std::int64_t e) {
      float s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
      std::int64_t i = b;
      for (; i + 8 <= e; i += 8) {
        s0 += buf[i]; s1 += buf[i + 1]; s2 += buf[i + 2]; s3 += buf[i + 3];
        s4 += buf[i + 4]; s5 += buf[i + 5]; s6 += buf[i + 6]; s7 += buf[i + 7];
      }
      part[static_cast<std::size_t>(at::get_thread_num()) * 16] += s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7;
    });
    t.push_back(now_s() - t0);
    if (part[0] < 0) std::printf("impossible\n");  // keeps the sum
  }
  return static_cast<double>(n * sizeof(float)) / median(t);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Per-expert compute speed by weight format, batch and threads, against the memory roofline"};
  std::int64_t hidden = 2048, intermediate = 5632;
  std::vector<std::string> formats = {"F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_K", "Q6_K"};
  std::vector<int> batches = {1, 4, 16}, threads = {1, 2};
  int reps = 7;
  std::string out_dir = "bench/moe_kernels/results";
  app.add_option("--hidden", hidden, "model width H")->capture_default_str();
  app.add_option("--intermediate", intermediate, "expert FFN width I")->capture_default_str();
  app.add_option("--formats", formats, "weight formats; comma-separated")->delimiter(',')->capture_default_str();
  app.add_option("--batches", batches, "tokens per call; comma-separated")->delimiter(',')->capture_default_str();
  app.add_option("--threads", threads, "intra-op threads; comma-separated")->delimiter(',')->capture_default_str();
  app.add_option("--reps", reps, "timed calls per cell (median)")->capture_default_str();
  app.add_option("--out", out_dir, "output directory")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    FERRY_REQUIRE(reps >= 1, "--reps must be positive");
    torch::NoGradGuard ng;
    std::filesystem::create_directories(out_dir);
    std::map<int, double> roofline;
    for (int t : threads) roofline[t] = read_bandwidth_Bps(t);
    ReportTable table = ReportTable::of({"format", "path", "batch", "threads", "expert_bytes", "ms_per_call",
                                         "tokens_per_s_per_expert", "weight_GBps", "roofline_GBps", "roofline_fraction"});
    nlohmann::json rows = nlohmann::json::array();
    auto values = torch::randn({3 * hidden * intermediate});
    for (const auto& name : formats) {
      const auto format = quant::parse_quant_type(name);
      FERRY_REQUIRE(format, "--formats: unknown format '", name, "' (", quant::quant_type_names(), ")");
      moe::ExpertLayout layout{hidden, intermediate, *format};
      std::vector<std::byte> weights(layout.bytes());
      quant::quantize_row(*format, values.data_ptr<float>(), weights.data(), layout.params());
      // Float32 runs twice: through libtorch (the engine's F32 path) and through ferry's kernel.
      std::vector<std::string> paths = {*format == quant::QuantType::kF32 ? "libtorch" : "ferry"};
      if (*format == quant::QuantType::kF32) paths.push_back("ferry");
      for (const auto& path : paths) {
        for (int t : threads) {
          at::set_num_threads(t);
          for (int b : batches) {
            auto x = torch::randn({b, hidden});
            moe::ExpertWork work;
            for (int i = 0; i < b; ++i) {
              work.rows.push_back(i);
              work.gates.push_back(1.0f);
            }
            const auto kernels = path == "libtorch" ? moe::ExpertKernels::kLibtorch : moe::ExpertKernels::kBlocks;
            auto call = [&] { return moe::run_expert(layout, weights.data(), x, work, "silu", kernels); };
            call();
            std::vector<double> times;
            for (int r = 0; r < reps; ++r) {
              const double t0 = now_s();
              call();
              times.push_back(now_s() - t0);
            }
            const double s = median(times);
            const double gbps = static_cast<double>(layout.bytes()) / s / 1e9;
            const double frac = gbps * 1e9 / roofline[t];
            table.add_row({name, path, std::to_string(b), std::to_string(t), std::to_string(layout.bytes()),
                           printf_cell(s * 1e3, "%.3f"), printf_cell(b / s, "%.1f"), printf_cell(gbps, "%.2f"),
                           printf_cell(roofline[t] / 1e9, "%.2f"), printf_cell(frac, "%.3f")});
            rows.push_back({{"format", name}, {"path", path}, {"batch", b}, {"threads", t},
                            {"expert_bytes", layout.bytes()}, {"ms_per_call", s * 1e3}, {"weight_GBps", gbps},
                            {"roofline_GBps", roofline[t] / 1e9}, {"roofline_fraction", frac}});
            std::fprintf(stderr, "%-5s %-8s batch %2d threads %d: %8.3f ms  %6.2f GB/s  %.2f of roofline\n",
                         name.c_str(), path.c_str(), b, t, s * 1e3, gbps, frac);
          }
        }
      }
    }
    write_report_file(out_dir + "/kernels.csv", table.csv());
    write_report_file(out_dir + "/kernels.json", nlohmann::json{{"hidden", hidden}, {"intermediate", intermediate},
                                                                 {"rows", rows}}.dump(2) + "\n");
    std::printf("%s", table.markdown().c_str());
    // Plot (batch 1): ms per call and roofline fraction by format, one bar per thread count.
    std::ostringstream gp, dat;
    std::map<std::string, std::map<int, std::pair<double, double>>> b1;  // label -> threads -> (ms, fraction)
    std::vector<std::string> labels;
    for (const auto& r : rows) {
      if (r["batch"].get<int>() != 1) continue;
      const std::string label = r["format"].get<std::string>() + "-" + r["path"].get<std::string>();
      if (!b1.count(label)) labels.push_back(label);
      b1[label][r["threads"].get<int>()] = {r["ms_per_call"].get<double>(), r["roofline_fraction"].get<double>()};
    }
    for (const auto& label : labels) {
      dat << label;
      for (int t : threads) dat << " " << b1[label][t].first;
      for (int t : threads) dat << " " << b1[label][t].second;
      dat << "\n";
    }
    write_report_file(out_dir + "/kernels.dat", dat.str());
    const auto nt = threads.size();
    auto bars = [&](std::size_t first_col) {
      std::string p;
      for (std::size_t k = 0; k < nt; ++k)
        p += std::string(k ? ", ''" : " '" + out_dir + "/kernels.dat'") + " using " + std::to_string(first_col + k) +
             (k ? "" : ":xtic(1)") + " title '" + std::to_string(threads[k]) + " thread(s)'";
      return p + "\n";
    };
    gp << "set terminal pngcairo size 1400,500 font ',10'\nset output '" << out_dir << "/kernels.png'\n"
       << "set multiplot layout 1,2\nset style data histograms\nset style fill solid 0.8 border -1\n"
       << "set xtics rotate by -30 noenhanced\nset grid ytics\n"
       << "set title 'one expert call, batch 1 (" << hidden << "x" << intermediate << "): ms'\n"
       << "plot" << bars(2) << "set title 'batch 1: fraction of the read-bandwidth roofline'\nset yrange [0:1.2]\n"
       << "plot" << bars(2 + nt) << "unset multiplot\n";
    write_report_file(out_dir + "/kernels.gp", gp.str());
    if (!apps::render_plots({PlotScript{out_dir + "/kernels.gp", ""}}, "bench_moe_kernels"))
      std::fprintf(stderr, "gnuplot not found: plot script written to %s/kernels.gp\n", out_dir.c_str());
  } catch (const InvalidArgument& e) {
    std::fprintf(stderr, "bench_moe_kernels: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_moe_kernels: %s\n", e.what());
    return 1;
  }
  return 0;
}
