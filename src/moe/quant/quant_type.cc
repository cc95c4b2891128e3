#include "moe/quant/quant_type.h"

#include <cctype>
#include <string>

#include "core/error.h"
#include "moe/quant/blocks.h"

namespace ferry::moe::quant {
namespace {
struct Entry {
  QuantType type;
  QuantTraits traits;
};
constexpr Entry kTypes[] = {
    {QuantType::kF32, {"F32", 1, 4}},
    {QuantType::kF16, {"F16", 1, 2}},
    {QuantType::kBF16, {"BF16", 1, 2}},
    {QuantType::kQ8_0, {"Q8_0", kQK8_0, sizeof(BlockQ8_0)}},
    {QuantType::kQ4_0, {"Q4_0", kQK4_0, sizeof(BlockQ4_0)}},
    {QuantType::kQ4_K, {"Q4_K", kQK_K, sizeof(BlockQ4_K)}},
    {QuantType::kQ6_K, {"Q6_K", kQK_K, sizeof(BlockQ6_K)}},
    {QuantType::kQ5_0, {"Q5_0", kQK5_0, sizeof(BlockQ5_0)}},
    {QuantType::kQ5_1, {"Q5_1", kQK5_0, sizeof(BlockQ5_1)}},
    {QuantType::kQ5_K, {"Q5_K", kQK_K, sizeof(BlockQ5_K)}},
    {QuantType::kMXFP4, {"MXFP4", kQK_MXFP4, sizeof(BlockMXFP4)}},
};
}  // namespace

const QuantTraits& quant_traits(QuantType type) {
  for (const auto& e : kTypes)
    if (e.type == type) return e.traits;
  FERRY_THROW(InternalError, "quant type id ", static_cast<std::uint32_t>(type), " has no traits");
}

std::optional<QuantType> quant_type_from_ggml(std::uint32_t ggml_type) {
  for (const auto& e : kTypes)
    if (static_cast<std::uint32_t>(e.type) == ggml_type) return e.type;
  return std::nullopt;
}

std::optional<QuantType> parse_quant_type(std::string_view name) {
  std::string upper(name);
  for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (upper == "FP32" || upper == "FLOAT32") upper = "F32";
  if (upper == "FP16" || upper == "FLOAT16") upper = "F16";
  if (upper == "BFLOAT16") upper = "BF16";
  for (const auto& e : kTypes)
    if (upper == e.traits.name) return e.type;
  return std::nullopt;
}

QuantType parse_weight_format(std::string_view text) {
  const auto format = parse_quant_type(text);
  // Q5_K is computed (the dense attention of Q4_K_M files) but is no --weights format.
  if (!format || !quant_type_computed(*format) || *format == QuantType::kQ5_K)
    FERRY_THROW(InvalidArgument, "--weights '", text, "': expected one of ", quant_type_names());
  return *format;
}

bool quant_type_computed(QuantType type) {
  return type != QuantType::kQ5_0 && type != QuantType::kQ5_1;
}

const char* quant_type_names() { return "F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K, MXFP4"; }
const char* quant_stored_type_names() { return "F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K, MXFP4, Q5_0, Q5_1, Q5_K"; }

std::size_t quant_row_bytes(QuantType type, std::size_t n) {
  const auto& t = quant_traits(type);
  if (n % t.block_elems != 0)
    FERRY_THROW(InvalidArgument, "a row of ", n, " weights cannot be stored in ", t.name, ": its blocks hold ",
                t.block_elems, " weights each");
  return n / t.block_elems * t.block_bytes;
}

}  // namespace ferry::moe::quant
