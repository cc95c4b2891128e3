// One routed expert applied to the tokens routed to it, from its bytes in the store's layout, and
// the measured time of such a call at batch 1 (the cost model when no compute profile is given).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/types.h>

#include "moe/model/decoder_ops.h"
#include "moe/store/host_pool.h"

namespace ferry::moe {

// Tokens routed to one expert in one layer: their rows in the layer's input and their gate weights.
struct ExpertWork {
  int expert = 0;
  std::vector<std::int64_t> rows;
  std::vector<float> gates;
};

// Which code computes an expert: libtorch's matmul (float32 only) or ferry's kernels on the
// blocks (moe/quant/matmul.h, every format, float32 included). kAuto picks by format (below).
enum class ExpertKernels { kAuto, kLibtorch, kBlocks };

// What kAuto chooses for `tokens` rows of experts in `format`: the block kernels, except float32
// at 8 tokens or more (libtorch's GEMM; measured, see expert_call.cc).
ExpertKernels auto_kernels(quant::QuantType format, std::int64_t tokens);
// What kAuto chooses for an expert of `layout` on `tokens` rows: auto_kernels() when all three
// projections are float32, else the block kernels (the only ones that read the other formats).
ExpertKernels auto_kernels(const ExpertLayout& layout, std::int64_t tokens);

// gate * expert(m[rows]) -> [rows, H], the expert's weights read in place at `base` (`layout`), its
// unit config's (glu()), its biases `bias` (resident: LayerWeights::expert_b*) when defined.
torch::Tensor run_expert(const ExpertLayout& layout, const std::byte* base, const torch::Tensor& m, const ExpertWork& work,
                         const MoeConfig& config, const ExpertBias& bias = {},
                         ExpertKernels kernels = ExpertKernels::kAuto);

// Median wall time of run_expert for one token on this CPU (an expert's shape; its values do not
// change the cost).
double measure_expert_call_s(const ExpertLayout& layout, const MoeConfig& config);

}  // namespace ferry::moe
