#include "core/units.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <utility>
#include <vector>

#include "core/error.h"

namespace ferry {
namespace {

struct Suffix {
  std::string_view name;
  double factor;
};

// Splits "12.5Gbps" into 12.5 and "Gbps"; throws naming `what` when no number leads.
std::pair<double, std::string_view> split_number(std::string_view text, std::string_view what) {
  std::string_view trimmed = text;
  while (!trimmed.empty() && std::isspace(static_cast<unsigned char>(trimmed.front()))) trimmed.remove_prefix(1);
  while (!trimmed.empty() && std::isspace(static_cast<unsigned char>(trimmed.back()))) trimmed.remove_suffix(1);
  double value = 0;
  auto [end, ec] = std::from_chars(trimmed.data(), trimmed.data() + trimmed.size(), value);
  if (ec != std::errc() || end == trimmed.data())
    FERRY_THROW(InvalidArgument, "invalid ", what, " '", text, "': expected a number followed by a unit");
  if (!std::isfinite(value) || value < 0)
    FERRY_THROW(InvalidArgument, "invalid ", what, " '", text, "': must be finite and at least 0");
  std::string_view unit(end, trimmed.data() + trimmed.size() - end);
  while (!unit.empty() && std::isspace(static_cast<unsigned char>(unit.front()))) unit.remove_prefix(1);
  return {value, unit};
}

double apply_suffix(std::string_view text, std::string_view what, const std::vector<Suffix>& suffixes,
                    std::string_view expected, bool allow_bare) {
  auto [value, unit] = split_number(text, what);
  if (unit.empty()) {
    if (allow_bare || value == 0) return value;
    FERRY_THROW(InvalidArgument, "invalid ", what, " '", text, "': missing unit (expected ", expected, ")");
  }
  for (const auto& s : suffixes)
    if (unit == s.name) return value * s.factor;
  FERRY_THROW(InvalidArgument, "invalid ", what, " '", text, "': unknown unit '", unit, "' (expected ", expected,
              ")");
}

}  // namespace

double parse_bandwidth_bytes_per_s(std::string_view text) {
  static const std::vector<Suffix> kSuffixes = {
      {"bps", 1.0 / 8},  {"Kbps", 1e3 / 8},  {"Mbps", 1e6 / 8},  {"Gbps", 1e9 / 8},  {"Tbps", 1e12 / 8},
      {"Bps", 1.0},      {"KBps", 1e3},      {"MBps", 1e6},      {"GBps", 1e9},      {"TBps", 1e12},
      {"B/s", 1.0},      {"KB/s", 1e3},      {"MB/s", 1e6},      {"GB/s", 1e9},      {"TB/s", 1e12},
      {"KiB/s", 1024.0}, {"MiB/s", 1048576.0}, {"GiB/s", 1073741824.0},
      // Linux tc's rates (tc(8): kbit, mbit, gbit are decimal bits per second), as scripts/cluster.sh takes them.
      {"kbit", 1e3 / 8}, {"mbit", 1e6 / 8}, {"gbit", 1e9 / 8}};
  double v = apply_suffix(text, "bandwidth", kSuffixes, "bps, Kbps, Mbps, Gbps, Bps, MBps, GBps, GB/s or tc's mbit", false);
  if (v <= 0) FERRY_THROW(InvalidArgument, "invalid bandwidth '", text, "': must be greater than 0");
  return v;
}

double parse_duration_s(std::string_view text, std::string_view what) {
  static const std::vector<Suffix> kSuffixes = {{"ns", 1e-9}, {"us", 1e-6}, {"µs", 1e-6}, {"ms", 1e-3},
                                                {"s", 1.0},   {"min", 60.0}, {"h", 3600.0}};
  return apply_suffix(text, what, kSuffixes, "ns, us, ms, s, min or h", false);
}

double parse_percent(std::string_view text, std::string_view what) {
  static const std::vector<Suffix> kSuffixes = {{"%", 1.0}};
  return apply_suffix(text, what, kSuffixes, "%", false);
}

BandwidthLatency parse_bandwidth_latency(std::string_view text, std::string_view whole) {
  BandwidthLatency out;
  try {
    const auto comma = text.find(',');
    out.bandwidth_bytes_per_s = parse_bandwidth_bytes_per_s(text.substr(0, comma));
    if (comma != std::string_view::npos) {
      const std::string_view lat = text.substr(comma + 1);
      if (lat.find(',') != std::string_view::npos) FERRY_THROW(InvalidArgument, "more than two fields");
      out.latency_s = parse_duration_s(lat);
      // Links sleep for it: a latency beyond any network's is a typo, and one beyond a
      // std::chrono duration's range would wrap to no delay at all.
      if (out.latency_s > 3600) FERRY_THROW(InvalidArgument, "latency '", lat, "' is above one hour");
    }
  } catch (const InvalidArgument& e) {
    FERRY_THROW(InvalidArgument, "invalid --link '", whole.empty() ? text : whole,
                "': expected BANDWIDTH[,LATENCY] such as 1Gbps,50us or 12GBps,10us (", e.what(), ")");
  }
  return out;
}

std::uint64_t parse_bytes(std::string_view text, std::string_view what) {
  static const std::vector<Suffix> kSuffixes = {
      {"B", 1.0},          {"KB", 1e3},          {"MB", 1e6},          {"GB", 1e9},         {"TB", 1e12},
      {"KiB", 1024.0},     {"MiB", 1048576.0},   {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
      {"K", 1024.0},       {"M", 1048576.0},     {"G", 1073741824.0}};
  double v = apply_suffix(text, what, kSuffixes, "B, KB, MB, GB, KiB, MiB or GiB", true);
  // 2^64 and above do not fit (llround would also wrap above 2^63).
  if (!(std::round(v) < 18446744073709551616.0))
    FERRY_THROW(InvalidArgument, "invalid ", what, " '", text, "': too large (at most 2^64 - 1 bytes, about 16 EiB)");
  return static_cast<std::uint64_t>(std::round(v));
}

std::string format_bytes(double bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.3g %s", bytes, kUnits[u]);
  return buf;
}

std::string format_duration(double s) {
  char buf[32];
  if (s < 1e-6) std::snprintf(buf, sizeof buf, "%.3g ns", s * 1e9);
  else if (s < 1e-3) std::snprintf(buf, sizeof buf, "%.3g us", s * 1e6);
  else if (s < 1) std::snprintf(buf, sizeof buf, "%.3g ms", s * 1e3);
  else std::snprintf(buf, sizeof buf, "%.3g s", s);
  return buf;
}

std::string duration_text(double s) {
  if (s == 0) return "0";
  static const Suffix kUnits[] = {{"s", 1.0}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}};
  const Suffix* unit = &kUnits[3];
  for (const Suffix& u : kUnits)
    if (s >= u.factor) {
      unit = &u;
      break;
    }
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.9g%s", s / unit->factor, std::string(unit->name).c_str());
  return buf;
}

std::string format_bandwidth(double bytes_per_s) {
  double bits = bytes_per_s * 8;
  char buf[32];
  if (bits >= 1e9) std::snprintf(buf, sizeof buf, "%.3g Gbps", bits / 1e9);
  else if (bits >= 1e6) std::snprintf(buf, sizeof buf, "%.3g Mbps", bits / 1e6);
  else std::snprintf(buf, sizeof buf, "%.3g Kbps", bits / 1e3);
  return buf;
}

}  // namespace ferry
