// One routed expert's call — y = w2·(act(w1·x) ⊙ w3·x) for a batch of tokens — as the engine runs
// it (moe/engine/expert_call.h), per weight format (float32 through libtorch, float32 and every
// block format through ferry's kernels, moe/quant/matmul.h), batch and thread count. Decode at
// batch 1 is a read of every weight once, so its speed limit is memory bandwidth: the roofline is
// this machine's measured read bandwidth (256-bit loads over a buffer larger than the caches, same threads),
// and each row reports the fraction of it the call reached (weight bytes / time / bandwidth). With
// --rows, one matrix of rows × H (an output head: 151936 × 2048) instead of an expert.
// Writes kernels.csv, kernels.json, kernels.gp and kernels.png to --out.
#include <ATen/Parallel.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstdint>
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
#include "moe/model/decoder_ops.h"
#include "moe/quant/matmul.h"
#include "moe/quant/quantize.h"
#include "moe/quant/row_groups.h"

namespace {

using namespace ferry;
namespace quant = ferry::moe::quant;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

#if defined(__x86_64__)
// OR of 256-bit loads, four independent chains: the loads set the pace.
__attribute__((target("avx2"))) std::uint64_t or_reduce(const std::uint64_t* p, std::size_t n) {
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    a0 = _mm256_or_si256(a0, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i)));
    a1 = _mm256_or_si256(a1, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 4)));
    a2 = _mm256_or_si256(a2, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 8)));
    a3 = _mm256_or_si256(a3, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 12)));
  }
  alignas(32) std::uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), _mm256_or_si256(_mm256_or_si256(a0, a1), _mm256_or_si256(a2, a3)));
  std::uint64_t x = lanes[0] | lanes[1] | lanes[2] | lanes[3];
  for (; i < n; ++i) x |= p[i];
  return x;
}
#else
std::uint64_t or_reduce(const std::uint64_t* p, std::size_t n) {
  std::uint64_t x = 0;
  for (std::size_t i = 0; i < n; ++i) x |= p[i];
  return x;
}
#endif

// Read bandwidth with `threads` threads: 256-bit loads over 1 GiB (well past the caches).
double read_bandwidth_Bps(int threads) {
  at::set_num_threads(threads);
  const std::size_t n = (std::size_t{1} << 30) / sizeof(std::uint64_t);
  std::vector<std::uint64_t> buf(n);
  for (std::size_t i = 0; i < n; ++i) buf[i] = i * 0x9e3779b97f4a7c15ull;
  std::vector<double> t;
  std::uint64_t sink = 0;
  for (int rep = 0; rep < 5; ++rep) {
    std::vector<std::uint64_t> part(static_cast<std::size_t>(threads) * 8, 0);
    const double t0 = now_s();
    at::parallel_for(0, static_cast<std::int64_t>(n), 1 << 20, [&](std::int64_t b, std::int64_t e) {
      part[static_cast<std::size_t>(at::get_thread_num()) * 8] ^=
          or_reduce(buf.data() + b, static_cast<std::size_t>(e - b));
    });
    t.push_back(now_s() - t0);
    for (auto v : part) sink ^= v;
  }
  if (sink == 42) std::printf(" ");  // keeps the reads
  return static_cast<double>(n * sizeof(std::uint64_t)) / median(t);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Per-expert compute speed by weight format, batch and threads, against the memory roofline"};
  std::int64_t hidden = 2048, intermediate = 5632, matrix_rows = 0;
  std::vector<std::string> formats = {"F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_K", "Q6_K", "MXFP4"};
  std::vector<int> batches = {1, 4, 16}, threads = {1, 2};
  int reps = 7;
  std::string out_dir = "bench/moe_kernels/results";
  app.add_option("--hidden", hidden, "model width H")->capture_default_str();
  app.add_option("--intermediate", intermediate, "expert FFN width I")->capture_default_str();
  app.add_option("--rows", matrix_rows, "time one matrix of this many rows x H instead of an expert (0: the expert)")
      ->capture_default_str();
  app.add_option("--formats", formats, "weight formats; comma-separated")->delimiter(',')->capture_default_str();
  app.add_option("--batches", batches, "tokens per call; comma-separated")->delimiter(',')->capture_default_str();
  app.add_option("--threads", threads, "intra-op threads; comma-separated")->delimiter(',')->capture_default_str();
  std::vector<std::string> kernel_sets = {quant::kernels_name(quant::best_matmul_kernels())};
  app.add_option("--kernels", kernel_sets, "ferry's kernels to time (portable, avx2, avx512vnni, amx); comma-separated")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--reps", reps, "timed calls per cell (median)")->capture_default_str();
  app.add_option("--out", out_dir, "output directory")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  auto set_kernels = [](const std::string& name) {
    for (auto k : {quant::Kernels::kPortable, quant::Kernels::kAvx2, quant::Kernels::kAvx512Vnni, quant::Kernels::kAmx})
      if (name == quant::kernels_name(k)) return quant::set_matmul_kernels(k);
    FERRY_THROW(InvalidArgument, "--kernels: unknown kernels '", name, "' (portable, avx2, avx512vnni, amx)");
  };
  try {
    FERRY_REQUIRE(reps >= 1, "--reps must be at least 1");
    FERRY_REQUIRE(matrix_rows >= 0, "--rows must be at least 0, got ", matrix_rows);
    torch::NoGradGuard ng;
    std::filesystem::create_directories(out_dir);
    std::map<int, double> roofline;
    for (int t : threads) roofline[t] = read_bandwidth_Bps(t);
    ReportTable table = ReportTable::of({"format", "path", "batch", "threads", "expert_bytes", "ms_per_call",
                                         "tokens_per_s_per_expert", "weight_GBps", "roofline_GBps", "roofline_fraction"});
    nlohmann::json rows = nlohmann::json::array();
    auto values = torch::randn({matrix_rows > 0 ? matrix_rows * hidden : 3 * hidden * intermediate});
    for (const auto& name : formats) {
      const auto format = quant::parse_quant_type(name);
      FERRY_REQUIRE(format, "--formats: unknown format '", name, "' (", quant::quant_type_names(), ")");
      moe::ExpertLayout layout{hidden, intermediate, *format};
      const std::size_t bytes =
          matrix_rows > 0 ? quant::quant_matrix_bytes(*format, static_cast<std::size_t>(matrix_rows),
                                                      static_cast<std::size_t>(hidden))
                          : layout.bytes();
      // Copies of the expert that together exceed the last-level cache (>= 512 MiB), called in turn,
      // as decoding cycles through the experts of every layer: each call reads from memory.
      const std::size_t copies = std::max<std::size_t>(2, (std::size_t{512} << 20) / bytes + 1);
      std::vector<std::byte> weights(bytes * copies);
      if (matrix_rows > 0) {
        quant::quantize_row(*format, values.data_ptr<float>(), weights.data(),
                            static_cast<std::size_t>(matrix_rows * hidden));
        quant::to_row_groups(*format, weights.data(), static_cast<std::size_t>(matrix_rows),
                             static_cast<std::size_t>(hidden));
      } else {
        quant::quantize_row(*format, values.data_ptr<float>(), weights.data(), layout.params());
        layout.to_kernel_layout(weights.data());
      }
      for (std::size_t c = 1; c < copies; ++c)
        std::copy(weights.begin(), weights.begin() + static_cast<std::ptrdiff_t>(bytes),
                  weights.begin() + static_cast<std::ptrdiff_t>(c * bytes));
      // Float32 also through libtorch (the engine's F32 path from 8 tokens on); every format
      // through each of ferry's kernel sets asked for.
      std::vector<std::string> paths;
      if (*format == quant::QuantType::kF32) paths.push_back("libtorch");
      for (const auto& k : kernel_sets) paths.push_back("ferry-" + k);
      for (const auto& path : paths) {
        if (path != "libtorch") set_kernels(path.substr(6));
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
            std::size_t next = 0;
            auto call = [&] {
              const std::byte* w = weights.data() + (next++ % copies) * bytes;
              if (matrix_rows > 0) return moe::project_blocks(x, *format, w, matrix_rows, hidden);
              return moe::run_expert(layout, w, x, work, moe::MoeConfig{}, {}, kernels);
            };
            call();
            std::vector<double> times;
            for (int r = 0; r < reps; ++r) {
              const double t0 = now_s();
              call();
              times.push_back(now_s() - t0);
            }
            const double s = median(times);
            const double gbps = static_cast<double>(bytes) / s / 1e9;
            const double frac = gbps * 1e9 / roofline[t];
            table.add_row({name, path, std::to_string(b), std::to_string(t), std::to_string(bytes),
                           printf_cell(s * 1e3, "%.3f"), printf_cell(b / s, "%.1f"), printf_cell(gbps, "%.2f"),
                           printf_cell(roofline[t] / 1e9, "%.2f"), printf_cell(frac, "%.3f")});
            rows.push_back({{"format", name}, {"path", path}, {"batch", b}, {"threads", t},
                            {"expert_bytes", bytes}, {"ms_per_call", s * 1e3}, {"weight_GBps", gbps},
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
