#include "moe/engine/expert_call.h"

#include <ATen/Parallel.h>

#include <algorithm>

#include <torch/types.h>
#include <torch/utils.h>

#include "core/clock.h"
#include "core/error.h"
#include "moe/model/decoder_ops.h"
#include "moe/quant/matmul.h"
#include "moe/quant/quantize.h"

namespace ferry::moe {
ExpertKernels auto_kernels(quant::QuantType format, std::int64_t tokens) {
  // Float32 at a few tokens is a matrix-vector product: ferry's kernel streams the weights near
  // the memory roofline where libtorch's reached 30 % of it on one thread (bench_moe_kernels:
  // 2048 x 5632 expert, batch 1: 5.2 ms vs 16.3 ms; batch 4: 12.2 vs 14.5); from 8 tokens on,
  // libtorch's blocked GEMM wins (batch 16: 23.7 vs 35.1 ms).
  if (format == quant::QuantType::kF32 && tokens >= 8) return ExpertKernels::kLibtorch;
  return ExpertKernels::kBlocks;
}

ExpertKernels auto_kernels(const ExpertLayout& L, std::int64_t tokens) {
  const bool f32 = L.format == quant::QuantType::kF32 && L.down_format == quant::QuantType::kF32;
  return f32 ? auto_kernels(L.format, tokens) : ExpertKernels::kBlocks;
}

torch::Tensor run_expert(const ExpertLayout& L, const std::byte* base, const torch::Tensor& m, const ExpertWork& work,
                         const MoeConfig& c, const ExpertBias& bias, ExpertKernels kernels) {
  const auto n = static_cast<std::int64_t>(work.rows.size());
  auto idx = torch::from_blob(const_cast<std::int64_t*>(work.rows.data()), {n}, torch::kInt64);
  auto gate = torch::from_blob(const_cast<float*>(work.gates.data()), {n, 1});
  auto x = m.index_select(0, idx).contiguous();
  if (kernels == ExpertKernels::kAuto) kernels = auto_kernels(L, n);
  if (kernels == ExpertKernels::kLibtorch) {
    FERRY_CHECK(L.format == quant::QuantType::kF32 && L.down_format == quant::QuantType::kF32,
                "libtorch computes float32 experts only");
    // from_blob wants non-const; the views are only read.
    auto* p = const_cast<float*>(reinterpret_cast<const float*>(base));
    auto w1 = torch::from_blob(p + L.w1_offset() / 4, {L.intermediate, L.hidden});
    auto w3 = torch::from_blob(p + L.w3_offset() / 4, {L.intermediate, L.hidden});
    auto w2 = torch::from_blob(p + L.w2_offset() / 4, {L.hidden, L.intermediate});
    // libtorch's matmul itself (gated_mlp streams small batches through ferry's kernel).
    auto h = glu(c, torch::matmul(x, w1.t()), torch::matmul(x, w3.t()), bias);
    return with_down_bias(torch::matmul(h, w2.t()), bias) * gate;
  }
  auto gu = project_blocks(x, L.hidden, {{L.format, base + L.w1_offset(), L.intermediate},
                                         {L.format, base + L.w3_offset(), L.intermediate}});
  auto h = glu(c, gu[0], gu[1], bias).contiguous();
  return with_down_bias(project_blocks(h, L.down_format, base + L.w2_offset(), L.hidden, L.intermediate), bias) * gate;
}

double measure_expert_call_s(const ExpertLayout& layout, const MoeConfig& config) {
  torch::NoGradGuard ng;
  auto x = torch::randn({1, layout.hidden});
  // Weights in the layout's format, from random floats (the cost does not depend on the values,
  // but a block format's scales must be finite numbers), quantized 64 rows at a time: the whole
  // matrix in float32 (224 MiB for Mixtral-8x7B) would raise the engine's peak memory at open
  // above what a budget under a memory limit leaves.
  const auto H = static_cast<std::size_t>(layout.hidden), I = static_cast<std::size_t>(layout.intermediate);
  const std::size_t up = H * I;  // weights of w1, w3, w2 each
  std::vector<std::byte> weights(layout.bytes());
  const auto fill = [&](quant::QuantType type, std::size_t offset, std::size_t row) {  // row: values per row
    const std::size_t chunk = 64 * row;
    for (std::size_t at = 0; at < up; at += chunk) {
      const std::size_t n = std::min(chunk, up - at);
      auto values = torch::randn({static_cast<std::int64_t>(n)});
      quant::quantize_row(type, values.data_ptr<float>(),
                          weights.data() + offset + at / row * quant::quant_row_bytes(type, row), n);
    }
  };
  fill(layout.format, layout.w1_offset(), H);
  fill(layout.format, layout.w3_offset(), H);
  fill(layout.down_format, layout.w2_offset(), I);
  layout.to_kernel_layout(weights.data());
  ExpertWork work{0, {0}, {1.f}};
  std::vector<double> t;
  for (int i = 0; i < 15; ++i) {
    const double t0 = now_s();
    run_expert(layout, weights.data(), x, work, config);
    t.push_back(now_s() - t0);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace ferry::moe
