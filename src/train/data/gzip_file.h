// Whole-file reads through zlib, which reads gzip-compressed and plain files alike.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace ferry::train {

// Reads the first bytes of a file and returns the most bytes its whole content may have (from
// a header that announces its size), or throws when that header is bad.
using ContentBound = std::function<std::uint64_t(std::span<const std::uint8_t> head)>;

// Reads all (decompressed) bytes of `path`, a gzip or a plain file. Throws IoError when the
// file is missing or unreadable, FormatError when a gzip stream is corrupt or cut short, and
// FormatError when the content is larger than `max_bytes`. With `bound`, it is called once the
// first `head_bytes` are inflated (fewer when the content is shorter), and the content may then
// not exceed what it returns: a small gzip file that inflates to gigabytes fails after its header,
// not after inflating it whole.
std::vector<std::uint8_t> read_maybe_gzip(const std::string& path,
                                          std::uint64_t max_bytes = std::uint64_t{1} << 34,
                                          std::size_t head_bytes = 0, const ContentBound& bound = {});

// Writes `bytes` to `path`, gzip-compressed when `gzip` is true. Throws IoError on failure.
void write_maybe_gzip(const std::string& path, const std::vector<std::uint8_t>& bytes,
                      bool gzip);

}  // namespace ferry::train
