// The (index, value) wire format shared by the sparsifiers (topk, randomk, dgc):
//   header (aux = k, numel) + k u32 indices, strictly ascending, each < numel
//                           + k fp32 values.                    Size 16 + 8k bytes.
// Indices are u32, so sparse codecs serve tensors of fewer than 2^32 elements.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "compress/wire_format.h"

namespace ferry::compress {

inline constexpr std::size_t kSparseMaxNumel = 0xffffffffu;

constexpr std::size_t sparse_size_bytes(std::size_t k) { return kHeaderBytes + 8 * k; }

// k = max(1, min(n, round(ratio * n))): the number of elements a ratio keeps.
std::size_t sparse_count(double ratio, std::size_t numel);

// Writes the payload for indices `idx` (ascending) with values x[idx[j]].
void write_sparse(std::vector<std::byte>& out, CodecId codec, std::size_t numel,
                  std::span<const std::uint32_t> idx, const float* x);

// Validates the payload completely (header, size = 16 + 8k, k <= numel, indices ascending and
// in range) before touching out; then out = decoded (kAdd = false) or out += decoded.
// Throws FormatError naming the codec and the first offending value.
void decode_sparse(std::span<const std::byte> payload, CodecId codec, std::span<float> out,
                   bool add);

// The indices a payload of topk, randomk or dgc for a tensor of `numel` elements sent, after
// decode_sparse's checks (FormatError on a bad or non-sparse payload).
std::vector<std::uint32_t> sparse_indices(std::span<const std::byte> payload, std::size_t numel);

// Throws InvalidArgument if a tensor is too large for u32 indices.
void require_sparse_numel(std::size_t numel, const char* codec);

}  // namespace ferry::compress
