#include "moe/model/finite_blocks.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "core/excerpt.h"
#include "core/half.h"
#include "moe/quant/blocks.h"

namespace ferry::moe {

namespace {

using quant::QuantType;

static_assert(offsetof(quant::BlockQ4_K, dmin) == 2 && offsetof(quant::BlockQ5_K, dmin) == 2 &&
              offsetof(quant::BlockQ5_1, m) == 2);

// Where a type's floating fields are: every `stride` bytes, `count` fields of `size` bytes at
// `offsets` (a float32/f16/bf16 value, or a block's f16 d, dmin, m).
struct Fields {
  std::size_t stride = 4, size = 4;
  std::size_t offsets[2] = {0, 0};
  int count = 1;
};

Fields fields_of(QuantType type) {
  switch (type) {
    case QuantType::kF32: return {4, 4, {0, 0}, 1};
    case QuantType::kF16:
    case QuantType::kBF16: return {2, 2, {0, 0}, 1};
    case QuantType::kQ8_0:
    case QuantType::kQ4_0:
    case QuantType::kQ5_0: return {quant::quant_traits(type).block_bytes, 2, {0, 0}, 1};  // d
    case QuantType::kQ5_1:                                                                 // d, m
    case QuantType::kQ4_K:                                                                 // d, dmin
    case QuantType::kQ5_K: return {quant::quant_traits(type).block_bytes, 2, {0, 2}, 2};
    case QuantType::kQ6_K: return {sizeof(quant::BlockQ6_K), 2, {offsetof(quant::BlockQ6_K, d), 0}, 1};
    case QuantType::kMXFP4: return {sizeof(quant::BlockMXFP4), 1, {0, 0}, 1};  // the E8M0 exponent e
  }
  FERRY_CHECK(false, "no finiteness rule for ", quant::quant_name(type));
  return {};
}

// Whether field bits `v` are Inf or NaN: all exponent bits set (E8M0: 255, its NaN).
inline bool bad_bits(QuantType type, std::uint32_t v) {
  if (type == QuantType::kF32) return (v & 0x7f800000u) == 0x7f800000u;
  if (type == QuantType::kMXFP4) return v == 0xFFu;
  if (type == QuantType::kBF16) return (v & 0x7F80u) == 0x7F80u;
  return (v & 0x7C00u) == 0x7C00u;  // f16 (F16 values and every block's scales)
}

inline std::uint32_t load(const std::byte* p, std::size_t size) {
  if (size == 1) return static_cast<std::uint32_t>(*p);
  if (size == 4) {
    std::uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  std::uint16_t h;
  std::memcpy(&h, p, 2);
  return h;
}

float value_of(QuantType type, std::uint32_t v) {
  if (type == QuantType::kMXFP4) return std::numeric_limits<float>::quiet_NaN();  // E8M0 255
  if (type == QuantType::kF32) {
    float f;
    std::memcpy(&f, &v, 4);
    return f;
  }
  return type == QuantType::kBF16 ? bf16_to_float(static_cast<std::uint16_t>(v))
                                  : half_to_float(static_cast<std::uint16_t>(v));
}

// The fields k of blocks [lo, hi) whose last byte lies in [begin, end).
void block_range(const Fields& f, std::size_t off, std::size_t begin, std::size_t end, std::size_t& lo, std::size_t& hi) {
  const std::size_t first_end = off + f.size;  // the end of block 0's field
  lo = begin < first_end ? 0 : (begin - first_end) / f.stride + 1;
  hi = end < first_end ? 0 : (end - first_end) / f.stride + 1;
}

}  // namespace

std::optional<NonFiniteBlock> first_nonfinite_block(QuantType type, const std::byte* data, std::size_t begin,
                                                    std::size_t end) {
  const Fields f = fields_of(type);
  bool bad = false;
  for (int k = 0; k < f.count; ++k) {
    std::size_t lo, hi;
    block_range(f, f.offsets[k], begin, end, lo, hi);
    // Branch-free over the blocks (an integer reduction the compiler vectorises); found, the
    // slow loop below names the first.
    unsigned any = 0;
    for (std::size_t b = lo; b < hi; ++b) any |= bad_bits(type, load(data + b * f.stride + f.offsets[k], f.size));
    bad = bad || any;
  }
  if (!bad) return std::nullopt;
  std::optional<NonFiniteBlock> first;
  for (int k = 0; k < f.count; ++k) {
    std::size_t lo, hi;
    block_range(f, f.offsets[k], begin, end, lo, hi);
    for (std::size_t b = lo; b < hi && (!first || b < first->block); ++b) {
      const std::uint32_t v = load(data + b * f.stride + f.offsets[k], f.size);
      if (bad_bits(type, v)) first = NonFiniteBlock{b, value_of(type, v)};
    }
  }
  return first;
}

std::optional<NonFiniteBlock> first_nonfinite_block(QuantType type, const std::byte* data, std::size_t bytes) {
  return first_nonfinite_block(type, data, 0, bytes);
}

namespace {

void require_finite_blocks(QuantType type, const std::byte* data, std::size_t begin, std::size_t end,
                           const std::string& name, const std::string& where, const std::string& what,
                           std::size_t first_block) {
  auto bad = first_nonfinite_block(type, data, begin, end);
  if (!bad) return;
  bad->block += first_block;
  const bool values = type == QuantType::kF32 || type == QuantType::kF16 || type == QuantType::kBF16;
  FERRY_THROW(FormatError, "tensor '", excerpt(name), "'", what.empty() ? "" : " (" + what + ")", " in '", excerpt(where),
              "' holds a non-finite ", values ? "value" : std::string(quant::quant_name(type)) + " scale", " (",
              type == QuantType::kMXFP4 ? std::string("E8M0 exponent 255: NaN") : detail::concat(bad->value), ") in ",
              values ? "element " : "block ", bad->block, ": weights must be finite");
}

}  // namespace

void require_finite_blocks(QuantType type, const std::byte* data, std::size_t begin, std::size_t end,
                           const std::string& name, const std::string& where, const std::string& what) {
  require_finite_blocks(type, data, begin, end, name, where, what, 0);
}

void require_finite_blocks(QuantType type, const std::byte* data, std::size_t bytes, const std::string& name,
                           const std::string& where, const std::string& what, std::size_t first_block) {
  require_finite_blocks(type, data, 0, bytes, name, where, what, first_block);
}

}  // namespace ferry::moe
