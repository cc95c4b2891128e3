// Parsing of human-written quantities: bandwidths, durations and byte sizes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ferry {

// "10Gbps", "500Mbps", "12GBps", "1.5GB/s" -> bytes per second. Bits (b) vs bytes (B) matter.
double parse_bandwidth_bytes_per_s(std::string_view text);
// "50us", "1.5ms", "2s", "100ns" -> seconds. A bare "0" is allowed.
double parse_duration_s(std::string_view text);
// "24GiB", "512MiB", "1.5GB", "4096" -> bytes. Binary (KiB) and decimal (KB) prefixes.
std::uint64_t parse_bytes(std::string_view text);

// 1536 -> "1.5 KiB".
std::string format_bytes(double bytes);
// 0.000050 -> "50 us".
std::string format_duration(double seconds);
// 1.25e8 -> "1 Gbps".
std::string format_bandwidth(double bytes_per_s);

}  // namespace ferry
