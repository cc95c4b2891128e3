#include "moe/model/dtype.h"

#include <cmath>
#include <cstring>
#include <string>

#include "core/error.h"
#include "core/half.h"

namespace ferry::moe {

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
      if (n) std::memcpy(dst, src, n * 4);  // an empty tensor's buffer may be null
      return;
    case DType::kBF16:
      for (std::size_t i = 0; i < n; ++i) {
        std::uint16_t h;
        std::memcpy(&h, bytes + 2 * i, 2);
        dst[i] = bf16_to_float(h);
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
      if (n) std::memcpy(dst, src, n * 4);  // an empty tensor's buffer may be null
      return;
    case DType::kBF16:
      for (std::size_t i = 0; i < n; ++i) {
        const std::uint16_t h = float_to_bf16(src[i]);
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
