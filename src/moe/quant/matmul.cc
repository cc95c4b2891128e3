#include "moe/quant/matmul.h"

#include <atomic>

#include "core/error.h"
#include "moe/quant/blocks.h"
#include "moe/quant/kernels.h"
#include "moe/quant/quantize.h"

namespace ferry::moe::quant {
namespace {

bool cpu_has_avx2() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                          __builtin_cpu_supports("f16c");
  return has;
}

std::atomic<bool> g_portable{false};

const kernels::DotTable& dots() {
  return matmul_uses_avx2() ? kernels::avx2_dots() : kernels::portable_dots();
}

using DotFn = float (*)(const void*, const void*, std::size_t);

DotFn dot_for(QuantType type) {
  const auto& t = dots();
  switch (type) {
    case QuantType::kF32: return t.f32;
    case QuantType::kF16: return t.f16;
    case QuantType::kBF16: return t.bf16;
    case QuantType::kQ8_0: return t.q8_0;
    case QuantType::kQ4_0: return t.q4_0;
    case QuantType::kQ4_K: return t.q4_k;
    case QuantType::kQ6_K: return t.q6_k;
    case QuantType::kQ5_0:
    case QuantType::kQ5_1:
    case QuantType::kQ5_K: break;
  }
  FERRY_THROW(InvalidArgument, "ferry stores but does not compute on ", quant_name(type), " weights (it computes on ",
              quant_type_names(), ")");
}

}  // namespace

bool matmul_uses_avx2() { return cpu_has_avx2() && !g_portable.load(std::memory_order_relaxed); }
void set_matmul_portable(bool portable) { g_portable.store(portable); }

ActivationFormat activation_format(QuantType weights) {
  switch (weights) {
    case QuantType::kQ8_0:
    case QuantType::kQ4_0: return ActivationFormat::kQ8_0;
    case QuantType::kQ4_K:
    case QuantType::kQ6_K: return ActivationFormat::kQ8_K;
    default: return ActivationFormat::kF32;
  }
}

std::size_t activation_row_bytes(QuantType weights, std::size_t n) {
  quant_row_bytes(weights, n);  // n must be whole blocks of the weights' format
  switch (activation_format(weights)) {
    case ActivationFormat::kQ8_0: return quant_row_bytes(QuantType::kQ8_0, n);
    case ActivationFormat::kQ8_K: return n / kQK_K * sizeof(BlockQ8_K);
    case ActivationFormat::kF32: break;
  }
  return n * sizeof(float);
}

void quantize_activations(QuantType weights, const float* x, std::size_t batch, std::size_t n,
                          std::vector<std::byte>& out) {
  const std::size_t row = activation_row_bytes(weights, n);
  out.resize(batch * row);
  for (std::size_t b = 0; b < batch; ++b) {
    void* dst = out.data() + b * row;
    switch (activation_format(weights)) {
      case ActivationFormat::kF32: quantize_row(QuantType::kF32, x + b * n, dst, n); break;
      case ActivationFormat::kQ8_0: quantize_row(QuantType::kQ8_0, x + b * n, dst, n); break;
      case ActivationFormat::kQ8_K: kernels::quantize_row_q8_k(x + b * n, dst, n); break;
    }
  }
}

void matmul_rows(QuantType type, const void* w, std::size_t n, std::size_t row_begin, std::size_t row_end,
                 const std::byte* activations, std::size_t batch, float* y, std::size_t y_stride) {
  const DotFn dot = dot_for(type);
  const std::size_t w_row = quant_row_bytes(type, n);
  const std::size_t x_row = activation_row_bytes(type, n);
  const auto* base = static_cast<const unsigned char*>(w);
  for (std::size_t r = row_begin; r < row_end; ++r) {
    const void* wr = base + r * w_row;
    for (std::size_t b = 0; b < batch; ++b) y[b * y_stride + r] = dot(wr, activations + b * x_row, n);
  }
}

}  // namespace ferry::moe::quant
