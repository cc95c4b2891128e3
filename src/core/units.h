// Parsing of human-written quantities: bandwidths, durations and byte sizes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ferry {

// "10Gbps", "500Mbps", "12GBps", "1.5GB/s", tc's "300mbit" -> bytes per second. Bits (b) vs
// bytes (B) matter.
double parse_bandwidth_bytes_per_s(std::string_view text);
// "50us", "1.5ms", "2s", "100ns" -> seconds. A bare "0" is allowed.
// The parsers throw InvalidArgument "invalid WHAT 'TEXT': ..."; `what` names the quantity or the
// flag it came from ("--device-mem").
double parse_duration_s(std::string_view text, std::string_view what = "duration");
// "24GiB", "512MiB", "1.5GB", "4096" -> bytes. Binary (KiB) and decimal (KB) prefixes.
std::uint64_t parse_bytes(std::string_view text, std::string_view what = "size");
// "30%" -> 30.
double parse_percent(std::string_view text, std::string_view what = "percentage");

// A link's rate and delay, written "BANDWIDTH[,LATENCY]": "1Gbps,50us", "12GBps,10us", "10Gbps"
// (latency 0): the rate of every paced link kind of --link (core/link_spec.h).
struct BandwidthLatency {
  double bandwidth_bytes_per_s = 0;
  double latency_s = 0;
};
// Throws InvalidArgument "invalid --link 'WHOLE': expected BANDWIDTH[,LATENCY] ... (why)" on a bad
// bandwidth, a latency that is bad or above an hour, or more than two fields. `whole` is the flag's
// value as given, when `text` is only its rate part ("file:2GBps,50us"); empty: `text`.
BandwidthLatency parse_bandwidth_latency(std::string_view text, std::string_view whole = {});

// 1536 -> "1.5 KiB".
std::string format_bytes(double bytes);
// 0.000050 -> "50 us".
std::string format_duration(double seconds);
// 0.000050 -> "50us", 0.0015 -> "1.5ms", 0 -> "0": as a flag is written, in the largest unit that
// keeps it at least 1, to 9 digits (parse_duration_s reads it back).
std::string duration_text(double seconds);
// 1.25e8 -> "1 Gbps".
std::string format_bandwidth(double bytes_per_s);

}  // namespace ferry
