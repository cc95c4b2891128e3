// What the kernel counts for this process (Linux /proc/self): bytes read from storage and the
// peak resident set, so that a benchmark can show that its reads reached the disk (not the page
// cache) and how much memory it held. Each returns 0 where /proc does not say.
#pragma once

#include <cstdint>

namespace ferry {

// /proc/self/io read_bytes: bytes this process caused to be fetched from the storage layer
// (page-cache hits are not counted; O_DIRECT reads are).
std::uint64_t process_storage_read_bytes();
// /proc/self/status VmHWM: the peak resident set since start or the last reset_peak_rss().
std::uint64_t process_peak_rss_bytes();
// Writes 5 to /proc/self/clear_refs, which resets VmHWM to the current RSS (Linux >= 4.0).
// Returns false where the kernel refused.
bool reset_peak_rss();

}  // namespace ferry
