// IDX files (the MNIST format): a big-endian header, then unsigned bytes in row-major order.
//   magic  = 0x00 0x00 <type> <ndim>   (type 0x08 = unsigned byte; 0x00000803 images,
//                                       0x00000801 labels)
//   dims   = ndim big-endian int32
//   data   = prod(dims) bytes, nothing after them
// Files may be gzip-compressed (".gz") or plain; zlib reads both.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ferry::train {

inline constexpr std::uint32_t kIdxImagesMagic = 0x00000803;  // ubyte, 3 dims [N, rows, cols]
inline constexpr std::uint32_t kIdxLabelsMagic = 0x00000801;  // ubyte, 1 dim [N]

// The content of one IDX file of unsigned bytes.
struct IdxArray {
  std::string path;                // file it was read from, for messages
  std::vector<std::int64_t> dims;  // sizes, outermost first
  std::vector<std::uint8_t> data;  // prod(dims) values, row-major
};

// Reads `path` and checks that its magic is `expected_magic` and that exactly prod(dims) data
// bytes follow. Throws IoError (missing or unreadable file) or FormatError (wrong magic,
// truncated header or data, trailing bytes), each naming the file and what was expected.
IdxArray read_idx_file(const std::string& path, std::uint32_t expected_magic);

// The parsing half of read_idx_file: checks the (decompressed) file content `bytes` the same
// way; `path` only names the source in messages. Throws FormatError.
IdxArray parse_idx_bytes(const std::vector<std::uint8_t>& bytes, std::uint32_t expected_magic,
                         const std::string& path);

// Writes an IDX file of unsigned bytes with magic 0x0000080<dims.size()>; gzip-compressed when
// `gzip` is true. For tests and tools. Throws InvalidArgument when data.size() != prod(dims).
void write_idx_file(const std::string& path, const std::vector<std::int64_t>& dims,
                    const std::vector<std::uint8_t>& data, bool gzip);

}  // namespace ferry::train
