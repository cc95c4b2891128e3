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
double parse_duration_s(std::string_view text);
// "24GiB", "512MiB", "1.5GB", "4096" -> bytes. Binary (KiB) and decimal (KB) prefixes.
std::uint64_t parse_bytes(std::string_view text);

// A link's rate and delay, written "BANDWIDTH[,LATENCY]": "1Gbps,50us", "12GBps,10us", "10Gbps"
// (latency 0). The one grammar of --link, for training's emulated NICs (comm/link) and MoE's
// host-to-device links (moe/store/link.h), which add their own named links around it.
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
// 1.25e8 -> "1 Gbps".
std::string format_bandwidth(double bytes_per_s);

}  // namespace ferry
