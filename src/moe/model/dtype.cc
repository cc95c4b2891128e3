#include "moe/model/dtype.h"

#include <cctype>
#include <string>

#include "core/error.h"
#include "moe/quant/dequantize.h"
#include "moe/quant/quantize.h"

namespace ferry::moe {

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kF32: return 4;
    case DType::kF16: return 2;
    case DType::kBF16: return 2;
    case DType::kU8: return 1;
  }
  return 0;
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "F32";
    case DType::kF16: return "F16";
    case DType::kBF16: return "BF16";
    case DType::kU8: return "U8";
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

namespace {
quant::QuantType as_quant(DType dtype) {
  switch (dtype) {
    case DType::kF32: return quant::QuantType::kF32;
    case DType::kF16: return quant::QuantType::kF16;
    case DType::kBF16: return quant::QuantType::kBF16;
    case DType::kU8: break;
  }
  FERRY_THROW(InternalError, "dtype ", static_cast<int>(dtype), " has no weight format");
}
}  // namespace

// The element types are the one-element "blocks" of moe/quant, converted there.
void convert_to_f32(DType dtype, const void* src, float* dst, std::size_t n) {
  if (dtype == DType::kU8) {
    const auto* b = static_cast<const std::uint8_t*>(src);
    for (std::size_t i = 0; i < n; ++i) dst[i] = b[i];
    return;
  }
  quant::dequantize_row(as_quant(dtype), src, dst, n);
}

void convert_from_f32(DType dtype, const float* src, void* dst, std::size_t n) {
  quant::quantize_row(as_quant(dtype), src, dst, n);
}

}  // namespace ferry::moe
