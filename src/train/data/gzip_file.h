// Whole-file reads through zlib, which reads gzip-compressed and plain files alike.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ferry::train {

// Reads all (decompressed) bytes of `path`, a gzip or a plain file. Throws IoError when the
// file is missing or unreadable, FormatError when a gzip stream is corrupt or cut short, and
// FormatError when the content is larger than `max_bytes`.
std::vector<std::uint8_t> read_maybe_gzip(const std::string& path,
                                          std::uint64_t max_bytes = std::uint64_t{1} << 34);

// Writes `bytes` to `path`, gzip-compressed when `gzip` is true. Throws IoError on failure.
void write_maybe_gzip(const std::string& path, const std::vector<std::uint8_t>& bytes,
                      bool gzip);

}  // namespace ferry::train
