#include "compress/sparse_payload.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"

namespace ferry::compress {

std::size_t sparse_count(double ratio, std::size_t numel) {
  const double k = std::round(ratio * static_cast<double>(numel));
  return std::clamp<std::size_t>(static_cast<std::size_t>(std::max(k, 1.0)), 1, numel);
}

void require_sparse_numel(std::size_t numel, const char* codec) {
  FERRY_REQUIRE(numel <= kSparseMaxNumel, codec, ": tensor of ", numel,
                " elements exceeds the 2^32-1 limit of u32 indices");
}

void write_sparse(std::vector<std::byte>& out, CodecId codec, std::size_t numel,
                  std::span<const std::uint32_t> idx, const float* x) {
  const std::size_t k = idx.size();
  write_header(out, sparse_size_bytes(k),
               {.codec = codec, .aux = static_cast<std::uint32_t>(k), .numel = numel});
  std::byte* pi = out.data() + kHeaderBytes;
  std::byte* pv = pi + 4 * k;
  std::memcpy(pi, idx.data(), 4 * k);
  for (std::size_t j = 0; j < k; ++j) store_le<float>(pv + 4 * j, x[idx[j]]);
}

namespace {
// Validates the payload completely (decode_sparse's checks); returns k.
std::size_t check_sparse(std::span<const std::byte> payload, CodecId codec, std::size_t n) {
  const char* name = codec_id_name(codec);
  PayloadHeader h = read_header(payload, codec, n);
  const std::size_t k = h.aux;
  if (k > n) FERRY_THROW(FormatError, name, " payload: count ", k, " exceeds numel ", n);
  check_payload_size(payload, sparse_size_bytes(k), codec);
  const std::byte* pi = payload.data() + kHeaderBytes;
  std::int64_t prev = -1;
  for (std::size_t j = 0; j < k; ++j) {
    const std::int64_t i = load_le<std::uint32_t>(pi + 4 * j);
    if (i >= static_cast<std::int64_t>(n))
      FERRY_THROW(FormatError, name, " payload: index ", i, " at position ", j,
                  " out of range for ", n, " elements");
    if (i <= prev)
      FERRY_THROW(FormatError, name, " payload: index ", i, " at position ", j,
                  " not above the previous index ", prev);
    prev = i;
  }
  return k;
}
}  // namespace

void decode_sparse(std::span<const std::byte> payload, CodecId codec, std::span<float> out,
                   bool add) {
  // Validate every index first, so a bad payload leaves out untouched.
  const std::size_t k = check_sparse(payload, codec, out.size());
  const std::byte* pi = payload.data() + kHeaderBytes;
  const std::byte* pv = pi + 4 * k;
  float* o = out.data();
  if (!add) std::fill(out.begin(), out.end(), 0.0f);
  for (std::size_t j = 0; j < k; ++j) {
    const std::uint32_t i = load_le<std::uint32_t>(pi + 4 * j);
    const float v = load_le<float>(pv + 4 * j);
    if (add) {
      o[i] += v;
    } else {
      o[i] = v;
    }
  }
}

std::vector<std::uint32_t> sparse_indices(std::span<const std::byte> payload, std::size_t numel) {
  if (payload.size() < kHeaderBytes) FERRY_THROW(FormatError, "sparse payload of ", payload.size(), " bytes");
  const auto codec = static_cast<CodecId>(payload[1]);
  if (codec != CodecId::kTopk && codec != CodecId::kRandomk && codec != CodecId::kDgc)
    FERRY_THROW(FormatError, "payload of codec id ", static_cast<int>(codec), " is not in the sparse format");
  const std::size_t k = check_sparse(payload, codec, numel);
  std::vector<std::uint32_t> idx(k);
  for (std::size_t j = 0; j < k; ++j) idx[j] = load_le<std::uint32_t>(payload.data() + kHeaderBytes + 4 * j);
  return idx;
}

}  // namespace ferry::compress
