#include "moe/quant/matmul.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>

#include "core/error.h"
#include "moe/quant/blocks.h"
#include "moe/quant/kernels.h"
#include "moe/quant/quantize.h"
#include "moe/quant/row_groups.h"

namespace ferry::moe::quant {
namespace {

bool cpu_has(Kernels k) {
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                           __builtin_cpu_supports("f16c");
  static const bool vnni = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
  static const bool amx = vnni && kernels::amx_usable();
  switch (k) {
    case Kernels::kPortable: return true;
    case Kernels::kAvx2: return avx2;
    case Kernels::kAvx512Vnni: return vnni;
    case Kernels::kAmx: return amx;
  }
  return false;
}

std::atomic<Kernels> g_kernels{best_matmul_kernels()};

using DotFn = float (*)(const void*, const void*, std::size_t);

DotFn dot_for(Kernels k, QuantType type) {
  const auto& t = k == Kernels::kPortable ? kernels::portable_dots() : kernels::avx2_dots();
  switch (type) {
    case QuantType::kF32: return t.f32;
    case QuantType::kF16: return t.f16;
    case QuantType::kBF16: return t.bf16;
    case QuantType::kQ8_0: return t.q8_0;
    case QuantType::kQ4_0: return t.q4_0;
    case QuantType::kQ4_K: return t.q4_k;
    case QuantType::kQ6_K: return t.q6_k;
    case QuantType::kQ5_K: return t.q5_k;
    case QuantType::kMXFP4: return t.mxfp4;
    case QuantType::kQ5_0:
    case QuantType::kQ5_1: break;
  }
  FERRY_THROW(InvalidArgument, "ferry stores but does not compute on ", quant_name(type), " weights (it computes on ",
              quant_type_names(), ")");
}

// Several activation rows per weight row, for the formats that have it (nullptr for the others).
kernels::TokensFn tokens_for(Kernels k, QuantType type) {
  const auto& t = k == Kernels::kPortable ? kernels::portable_dots() : kernels::avx2_dots();
  if (type == QuantType::kF32) return t.f32_tokens;
  if (type == QuantType::kQ6_K) return t.q6_k_tokens;
  return nullptr;
}

// Several weight rows as stored at once, for the formats and kernels that have it (nullptr for the others).
kernels::RowsFn rows_for(Kernels k, QuantType type) {
  return k == Kernels::kAmx && type == QuantType::kQ6_K ? kernels::amx_rows().q6_k : nullptr;
}

kernels::GroupFn group_for(Kernels k, QuantType type) {
  const auto& t = k == Kernels::kAmx         ? kernels::amx_groups()
                  : k == Kernels::kAvx512Vnni ? kernels::vnni_groups()
                  : k == Kernels::kAvx2       ? kernels::avx2_groups()
                                              : kernels::portable_groups();
  switch (type) {
    case QuantType::kQ4_0: return t.q4_0;
    case QuantType::kQ4_K: return t.q4_k;
    case QuantType::kMXFP4: return t.mxfp4;
    default: return t.q8_0;
  }
}

}  // namespace

const char* kernels_name(Kernels k) {
  switch (k) {
    case Kernels::kPortable: return "portable";
    case Kernels::kAvx2: return "avx2";
    case Kernels::kAvx512Vnni: return "avx512vnni";
    case Kernels::kAmx: return "amx";
  }
  return "?";
}

Kernels best_matmul_kernels() {
  return cpu_has(Kernels::kAmx)          ? Kernels::kAmx
         : cpu_has(Kernels::kAvx512Vnni) ? Kernels::kAvx512Vnni
         : cpu_has(Kernels::kAvx2)       ? Kernels::kAvx2
                                         : Kernels::kPortable;
}
Kernels matmul_kernels() { return g_kernels.load(std::memory_order_relaxed); }
void set_matmul_kernels(Kernels k) {
  FERRY_REQUIRE(cpu_has(k), "this CPU cannot run the ", kernels_name(k), " kernels");
  g_kernels.store(k);
}

ActivationFormat activation_format(QuantType weights) {
  switch (weights) {
    case QuantType::kQ8_0:
    case QuantType::kQ4_0:
    case QuantType::kMXFP4: return ActivationFormat::kQ8_0;
    case QuantType::kQ4_K:
    case QuantType::kQ5_K:
    case QuantType::kQ6_K: return ActivationFormat::kQ8_K;
    default: return ActivationFormat::kF32;
  }
}

std::size_t activation_row_bytes(QuantType weights, std::size_t n) {
  quant_row_bytes(weights, n);  // n must be whole blocks of the weights' format
  switch (activation_format(weights)) {
    case ActivationFormat::kQ8_0: return quant_row_bytes(QuantType::kQ8_0, n) + n / kQK8_0 * sizeof(std::int32_t);
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
    std::byte* dst = out.data() + b * row;
    switch (activation_format(weights)) {
      case ActivationFormat::kF32: quantize_row(QuantType::kF32, x + b * n, dst, n); break;
      case ActivationFormat::kQ8_0: {
        quantize_row(QuantType::kQ8_0, x + b * n, dst, n);
        // The blocks' sums of quants, after the blocks (kernels.h).
        std::byte* sums = dst + quant_row_bytes(QuantType::kQ8_0, n);
        for (std::size_t i = 0; i < n / kQK8_0; ++i) {
          const auto* q = reinterpret_cast<const std::int8_t*>(dst + i * sizeof(BlockQ8_0) + 2);
          std::int32_t s = 0;
          for (int j = 0; j < kQK8_0; ++j) s += q[j];
          std::memcpy(sums + i * sizeof s, &s, sizeof s);
        }
        break;
      }
      case ActivationFormat::kQ8_K: kernels::quantize_row_q8_k(x + b * n, dst, n); break;
    }
  }
}

std::size_t matmul_row_unit(QuantType type) { return has_row_groups(type) ? kRowGroup : 1; }

void matmul_rows(QuantType type, const void* w, std::size_t rows, std::size_t n, std::size_t row_begin,
                 std::size_t row_end, const std::byte* activations, std::size_t batch, float* y, std::size_t y_stride) {
  const Kernels k = matmul_kernels();
  const DotFn dot = dot_for(k, type);
  const std::size_t w_row = quant_row_bytes(type, n);
  const std::size_t x_row = activation_row_bytes(type, n);
  const auto* base = static_cast<const unsigned char*>(w);
  std::size_t r = row_begin;
  if (has_row_groups(type)) {
    const std::size_t grouped = rows / kRowGroup * kRowGroup;
    FERRY_CHECK(row_begin % kRowGroup == 0 || row_begin >= grouped, "row range [", row_begin, ", ", row_end,
                ") splits a row group");
    FERRY_CHECK(row_end % kRowGroup == 0 || row_end >= grouped, "row range [", row_begin, ", ", row_end,
                ") splits a row group");
    if (const std::size_t end = std::min(row_end, grouped); r < end) {
      group_for(k, type)(base + r * w_row, (end - r) / kRowGroup, n, activations, x_row, batch, y + r, y_stride);
      r = end;
    }
  }
  const kernels::RowsFn several_rows = rows_for(k, type);
  if (const kernels::TokensFn tokens = tokens_for(k, type); (several_rows || tokens) && batch > 1) {
    // Activation rows in chunks of ~256 KiB (whole tiles of 16) that stay in cache while every
    // weight row passes.
    const std::size_t chunk = std::max<std::size_t>(16, (std::size_t{256} << 10) / x_row / 16 * 16);
    for (std::size_t b = 0; b < batch; b += chunk) {
      const std::size_t count = std::min(chunk, batch - b);
      if (several_rows) {
        several_rows(base + r * w_row, row_end - r, n, activations + b * x_row, x_row, count, y + b * y_stride + r,
                     y_stride);
        continue;
      }
      for (std::size_t rr = r; rr < row_end; ++rr)
        tokens(base + rr * w_row, n, activations + b * x_row, x_row, count, y + b * y_stride + rr, y_stride);
    }
    return;
  }
  for (; r < row_end; ++r) {
    const void* wr = base + r * w_row;
    for (std::size_t b = 0; b < batch; ++b) y[b * y_stride + r] = dot(wr, activations + b * x_row, n);
  }
}

}  // namespace ferry::moe::quant
