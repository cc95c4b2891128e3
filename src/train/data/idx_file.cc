#include "train/data/idx_file.h"

#include <cstdio>
#include <span>

#include "core/error.h"
#include "train/data/gzip_file.h"

namespace ferry::train {
namespace {

std::uint32_t read_be32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         std::uint32_t{p[3]};
}

void append_be32(std::vector<std::uint8_t>& out, std::uint32_t v) {
  out.push_back(static_cast<std::uint8_t>(v >> 24));
  out.push_back(static_cast<std::uint8_t>(v >> 16));
  out.push_back(static_cast<std::uint8_t>(v >> 8));
  out.push_back(static_cast<std::uint8_t>(v));
}

std::string hex32(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08X", v);
  return buf;
}

std::string dims_text(const std::vector<std::int64_t>& dims) {
  std::string s = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

// The magic and dims of an IDX file's first bytes (at least its header; more is ignored).
struct IdxHeader {
  std::vector<std::int64_t> dims;
  std::uint64_t count = 1;       // prod(dims): the data bytes after the header
  std::size_t header_bytes = 0;  // 4 + 4 * ndim
};

IdxHeader parse_idx_header(std::span<const std::uint8_t> bytes, std::uint32_t expected_magic,
                           const std::string& path) {
  const std::uint32_t ndim = expected_magic & 0xFF;
  FERRY_CHECK((expected_magic & 0xFFFFFF00u) == 0x00000800u && ndim >= 1,
              "not an unsigned-byte IDX magic: ", hex32(expected_magic));
  IdxHeader h;
  h.header_bytes = 4 + 4 * static_cast<std::size_t>(ndim);
  if (bytes.size() < 4)
    FERRY_THROW(FormatError, path, ": truncated IDX header: ", bytes.size(),
                " bytes, expected at least ", h.header_bytes);
  const std::uint32_t magic = read_be32(bytes.data());
  if (magic != expected_magic) {
    FERRY_THROW(FormatError, path, ": wrong IDX magic ", hex32(magic), ", expected ",
                hex32(expected_magic), " (",
                expected_magic == kIdxImagesMagic   ? "unsigned-byte images [N,rows,cols]"
                : expected_magic == kIdxLabelsMagic ? "unsigned-byte labels [N]"
                                                    : "unsigned-byte array",
                ")");
  }
  if (bytes.size() < h.header_bytes)
    FERRY_THROW(FormatError, path, ": truncated IDX header: ", bytes.size(),
                " bytes, expected at least ", h.header_bytes);
  for (std::uint32_t i = 0; i < ndim; ++i) {
    const std::uint32_t d = read_be32(bytes.data() + 4 + 4 * i);
    if (d == 0 || d > 0x7FFFFFFFu)
      FERRY_THROW(FormatError, path, ": IDX dimension ", i, " is ", d,
                  ", expected a positive size");
    h.dims.push_back(d);
    // Checked before multiplying: count * d could wrap past 2^64 back to a small number.
    if (d > (std::uint64_t{1} << 40) / h.count)
      FERRY_THROW(FormatError, path, ": IDX dims ", dims_text(h.dims),
                  " describe more data than any file this reads");
    h.count *= d;
  }
  return h;
}

}  // namespace

IdxArray read_idx_file(const std::string& path, std::uint32_t expected_magic) {
  // The header is checked as soon as it is inflated, and the content may not exceed the size it
  // announces: a small gzip file that inflates to gigabytes fails there. 1 TiB of pixels is far
  // beyond any data set this reads; it bounds a corrupt header.
  const std::size_t header = 4 + 4 * static_cast<std::size_t>(expected_magic & 0xFF);
  auto bound = [&](std::span<const std::uint8_t> head) {
    const IdxHeader h = parse_idx_header(head, expected_magic, path);
    return h.header_bytes + h.count;
  };
  return parse_idx_bytes(read_maybe_gzip(path, std::uint64_t{1} << 40, header, bound), expected_magic, path);
}

IdxArray parse_idx_bytes(const std::vector<std::uint8_t>& bytes, std::uint32_t expected_magic,
                         const std::string& path) {
  const IdxHeader h = parse_idx_header(bytes, expected_magic, path);
  IdxArray out;
  out.path = path;
  out.dims = h.dims;
  const std::size_t header = h.header_bytes;
  const std::uint64_t count = h.count;
  const std::uint64_t payload = bytes.size() - header;
  if (payload < count) {
    FERRY_THROW(FormatError, path, ": truncated IDX data: dims ", dims_text(out.dims),
                " need ", count, " bytes after the header, found ", payload);
  }
  if (payload > count) {
    FERRY_THROW(FormatError, path, ": IDX size mismatch: dims ", dims_text(out.dims), " need ",
                count, " bytes after the header, found ", payload, " (", payload - count,
                " extra)");
  }
  out.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(header), bytes.end());
  return out;
}

void write_idx_file(const std::string& path, const std::vector<std::int64_t>& dims,
                    const std::vector<std::uint8_t>& data, bool gzip) {
  FERRY_REQUIRE(!dims.empty() && dims.size() < 256, "IDX needs 1..255 dims, got ", dims.size());
  std::uint64_t count = 1;
  for (auto d : dims) {
    FERRY_REQUIRE(d > 0 && d <= 0x7FFFFFFF, "IDX dimension out of range: ", d);
    count *= static_cast<std::uint64_t>(d);
  }
  FERRY_REQUIRE(count == data.size(), "IDX dims ", dims_text(dims), " need ", count,
                " values, got ", data.size());
  std::vector<std::uint8_t> bytes;
  bytes.reserve(4 + 4 * dims.size() + data.size());
  append_be32(bytes, 0x00000800u | static_cast<std::uint32_t>(dims.size()));
  for (auto d : dims) append_be32(bytes, static_cast<std::uint32_t>(d));
  bytes.insert(bytes.end(), data.begin(), data.end());
  write_maybe_gzip(path, bytes, gzip);
}

}  // namespace ferry::train
