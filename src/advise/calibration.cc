#include "advise/calibration.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace ferry::advise {
namespace {

constexpr int kDims = 6;
using Vec = std::array<double, kDims>;

struct Bounds {
  Vec lo, hi;
};

Bounds bounds(const FitOptions& o) {
  // cores, compute_scale, cpu_s_per_byte, message_s, ps_overlap, run_overhead_s
  return {{0.5, 0.3, 0.0, 0.0, 0.0, 0.0}, {o.max_cores, 4.0, 5e-9, 1e-4, 1.0, 5.0}};
}

MachineConstants from_unit(const Vec& u, const Bounds& b) {
  Vec v;
  for (int i = 0; i < kDims; ++i) v[i] = b.lo[i] + std::clamp(u[i], 0.0, 1.0) * (b.hi[i] - b.lo[i]);
  return {v[0], v[1], v[2], v[3], v[4], v[5]};
}

Vec to_unit(const MachineConstants& k, const Bounds& b) {
  const Vec v{k.cores, k.compute_scale, k.cpu_s_per_byte, k.message_s, k.ps_overlap, k.run_overhead_s};
  Vec u;
  for (int i = 0; i < kDims; ++i) u[i] = std::clamp((v[i] - b.lo[i]) / (b.hi[i] - b.lo[i]), 0.0, 1.0);
  return u;
}

double objective(const std::vector<CalibrationPoint>& pts, const MachineConstants& k) {
  double sum = 0;
  for (const auto& p : pts) {
    const double pred = predict(p.algo, p.scenario, k).samples_per_s;
    const double e = std::log(std::max(pred, 1e-12) / p.measured_samples_per_s);
    sum += e * e;
  }
  return sum;
}

// Nelder-Mead in the unit box (points clamped into it).
Vec nelder_mead(const std::function<double(const Vec&)>& f, Vec x0, int iterations) {
  std::array<Vec, kDims + 1> simplex;
  std::array<double, kDims + 1> fx;
  simplex[0] = x0;
  for (int i = 0; i < kDims; ++i) {
    Vec x = x0;
    x[i] = x[i] < 0.5 ? x[i] + 0.25 : x[i] - 0.25;
    simplex[i + 1] = x;
  }
  auto clamp = [](Vec v) {
    for (auto& e : v) e = std::clamp(e, 0.0, 1.0);
    return v;
  };
  for (int i = 0; i <= kDims; ++i) fx[i] = f(simplex[i]);
  for (int it = 0; it < iterations; ++it) {
    std::array<int, kDims + 1> order;
    for (int i = 0; i <= kDims; ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](int a, int b) { return fx[a] < fx[b]; });
    auto s2 = simplex;
    auto f2 = fx;
    for (int i = 0; i <= kDims; ++i) {
      simplex[i] = s2[order[i]];
      fx[i] = f2[order[i]];
    }
    if (fx[kDims] - fx[0] < 1e-12) break;
    Vec centroid{};
    for (int i = 0; i < kDims; ++i)
      for (int d = 0; d < kDims; ++d) centroid[d] += simplex[i][d] / kDims;
    auto along = [&](double t) {
      Vec v;
      for (int d = 0; d < kDims; ++d) v[d] = centroid[d] + t * (simplex[kDims][d] - centroid[d]);
      return clamp(v);
    };
    const Vec xr = along(-1.0);
    const double fr = f(xr);
    if (fr < fx[0]) {
      const Vec xe = along(-2.0);
      const double fe = f(xe);
      if (fe < fr) {
        simplex[kDims] = xe;
        fx[kDims] = fe;
      } else {
        simplex[kDims] = xr;
        fx[kDims] = fr;
      }
    } else if (fr < fx[kDims - 1]) {
      simplex[kDims] = xr;
      fx[kDims] = fr;
    } else {
      const Vec xc = along(0.5);
      const double fc = f(xc);
      if (fc < fx[kDims]) {
        simplex[kDims] = xc;
        fx[kDims] = fc;
      } else {
        for (int i = 1; i <= kDims; ++i) {
          for (int d = 0; d < kDims; ++d) simplex[i][d] = simplex[0][d] + 0.5 * (simplex[i][d] - simplex[0][d]);
          fx[i] = f(simplex[i]);
        }
      }
    }
  }
  int best = 0;
  for (int i = 1; i <= kDims; ++i)
    if (fx[i] < fx[best]) best = i;
  return simplex[best];
}

}  // namespace

double rms_log_error(const std::vector<CalibrationPoint>& pts, const MachineConstants& k) {
  return pts.empty() ? 0.0 : std::sqrt(objective(pts, k) / static_cast<double>(pts.size()));
}

MachineConstants fit_constants(const std::vector<CalibrationPoint>& pts, const MachineConstants& start,
                               const FitOptions& o) {
  FERRY_REQUIRE(!pts.empty(), "calibration needs at least one measured run");
  for (const auto& p : pts)
    FERRY_REQUIRE(p.measured_samples_per_s > 0, "calibration run of ", p.algo, " has samples/s ",
                  p.measured_samples_per_s);
  const Bounds b = bounds(o);
  auto f = [&](const Vec& u) { return objective(pts, from_unit(u, b)); };
  Vec best = to_unit(start, b);
  double best_f = f(best);
  for (int s = 0; s < o.starts; ++s) {
    Vec x0 = to_unit(start, b);
    if (s > 0)  // spread: a fixed low-discrepancy pattern, so fits are reproducible
      for (int d = 0; d < kDims; ++d) x0[d] = std::fmod(0.17 + 0.618034 * (s * kDims + d), 1.0);
    // Restart once from the result, so that a collapsed simplex opens again.
    Vec x = nelder_mead(f, nelder_mead(f, x0, o.iterations), o.iterations);
    const double fx = f(x);
    if (fx < best_f) {
      best_f = fx;
      best = x;
    }
  }
  return from_unit(best, b);
}

nlohmann::json constants_to_json(const MachineConstants& k) {
  return {{"cores", k.cores},
          {"compute_scale", k.compute_scale},
          {"cpu_s_per_byte", k.cpu_s_per_byte},
          {"message_s", k.message_s},
          {"ps_overlap", k.ps_overlap},
          {"run_overhead_s", k.run_overhead_s}};
}

MachineConstants constants_from_json(const nlohmann::json& j, const std::string& what) {
  const nlohmann::json& c = j.contains("constants") ? j.at("constants") : j;
  MachineConstants k;
  auto get = [&](const char* key, double& v) {
    if (!c.contains(key)) FERRY_THROW(FormatError, what, ": calibration lacks '", key, "'");
    if (!c.at(key).is_number()) FERRY_THROW(FormatError, what, ": calibration field '", key, "' is not a number");
    v = c.at(key).get<double>();
    if (!std::isfinite(v) || v < 0) FERRY_THROW(FormatError, what, ": calibration field '", key, "' must be finite and at least 0");
  };
  get("cores", k.cores);
  get("compute_scale", k.compute_scale);
  get("cpu_s_per_byte", k.cpu_s_per_byte);
  get("message_s", k.message_s);
  get("ps_overlap", k.ps_overlap);
  get("run_overhead_s", k.run_overhead_s);
  if (k.ps_overlap > 1) FERRY_THROW(FormatError, what, ": ps_overlap must lie in [0, 1]");
  return k;
}

CalibrationFile load_calibration(const std::string& path) {
  std::ifstream in(path);
  if (!in) FERRY_THROW(IoError, "cannot read calibration file ", path);
  std::stringstream text;
  text << in.rdbuf();
  const auto j = nlohmann::json::parse(text.str(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) FERRY_THROW(FormatError, "calibration file ", path, " is not a JSON object");
  CalibrationFile f;
  f.constants = constants_from_json(j, "calibration file " + path);
  if (j.contains("profiles")) {
    if (!j.at("profiles").is_string()) FERRY_THROW(FormatError, "calibration file ", path, ": 'profiles' must be a path");
    const std::filesystem::path dir = j.at("profiles").get<std::string>();
    f.profiles_dir = (dir.is_absolute() ? dir : std::filesystem::path(path).parent_path() / dir).lexically_normal().string();
  }
  return f;
}

MachineConstants load_constants(const std::string& path) { return load_calibration(path).constants; }

}  // namespace ferry::advise
