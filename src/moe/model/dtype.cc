#include "moe/model/dtype.h"

#include <cmath>
#include <cstring>
#include <string>

#include "core/error.h"

namespace ferry::moe {
namespace {

float half_to_float(std::uint16_t h) {
  std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  std::uint32_t exp = (h >> 10) & 0x1f;
  std::uint32_t mant = h & 0x3ffu;
  std::uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      mant &= 0x3ffu;
      bits = sign | (static_cast<std::uint32_t>(127 - 15 - e) << 23) | (mant << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

std::uint16_t float_to_half(float f) {
  std::uint32_t x;
  std::memcpy(&x, &f, 4);
  std::uint32_t sign = (x >> 16) & 0x8000u;
  std::int32_t exp = static_cast<std::int32_t>((x >> 23) & 0xff) - 127 + 15;
  std::uint32_t mant = x & 0x7fffffu;
  if (((x >> 23) & 0xff) == 0xff) return static_cast<std::uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0));
  if (exp >= 0x1f) return static_cast<std::uint16_t>(sign | 0x7c00u);
  if (exp <= 0) {
    if (exp < -10) return static_cast<std::uint16_t>(sign);
    mant |= 0x800000u;
    std::uint32_t shift = static_cast<std::uint32_t>(14 - exp);
    std::uint32_t half = mant >> shift;
    std::uint32_t rem = mant & ((1u << shift) - 1);
    std::uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) ++half;
    return static_cast<std::uint16_t>(sign | half);
  }
  std::uint32_t half = sign | (static_cast<std::uint32_t>(exp) << 10) | (mant >> 13);
  std::uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1))) ++half;  // may carry into exponent: correct
  return static_cast<std::uint16_t>(half);
}

}  // namespace

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kF32: return 4;
    case DType::kF16: return 2;
    case DType::kBF16: return 2;
  }
  return 0;
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "F32";
    case DType::kF16: return "F16";
    case DType::kBF16: return "BF16";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view text) {
  std::string t(text);
  for (auto& c : t) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (t == "F32" || t == "FP32" || t == "FLOAT32") return DType::kF32;
  if (t == "F16" || t == "FP16" || t == "FLOAT16") return DType::kF16;
  if (t == "BF16" || t == "BFLOAT16") return DType::kBF16;
  return std::nullopt;
}

void convert_to_f32(DType dtype, const void* src, float* dst, std::size_t n) {
  const auto* bytes = static_cast<const unsigned char*>(src);
  switch (dtype) {
    case DType::kF32:
      std::memcpy(dst, src, n * 4);
      return;
    case DType::kBF16:
      for (std::size_t i = 0; i < n; ++i) {
        std::uint16_t h;
        std::memcpy(&h, bytes + 2 * i, 2);
        std::uint32_t bits = static_cast<std::uint32_t>(h) << 16;
        std::memcpy(dst + i, &bits, 4);
      }
      return;
    case DType::kF16:
      for (std::size_t i = 0; i < n; ++i) {
        std::uint16_t h;
        std::memcpy(&h, bytes + 2 * i, 2);
        dst[i] = half_to_float(h);
      }
      return;
  }
}

void convert_from_f32(DType dtype, const float* src, void* dst, std::size_t n) {
  auto* bytes = static_cast<unsigned char*>(dst);
  switch (dtype) {
    case DType::kF32:
      std::memcpy(dst, src, n * 4);
      return;
    case DType::kBF16:
      for (std::size_t i = 0; i < n; ++i) {
        std::uint32_t x;
        std::memcpy(&x, src + i, 4);
        std::uint16_t h;
        if (std::isnan(src[i])) {
          h = static_cast<std::uint16_t>((x >> 16) | 0x40);
        } else {
          std::uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
          h = static_cast<std::uint16_t>((x + rounding) >> 16);
        }
        std::memcpy(bytes + 2 * i, &h, 2);
      }
      return;
    case DType::kF16:
      for (std::size_t i = 0; i < n; ++i) {
        std::uint16_t h = float_to_half(src[i]);
        std::memcpy(bytes + 2 * i, &h, 2);
      }
      return;
  }
}

}  // namespace ferry::moe
