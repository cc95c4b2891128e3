// Several routed experts of one layer computed together, for the experts whose bytes are in place
// at once (every expert when all are resident). One call per expert (run_expert) pays, per
// expert, two parallel regions with their start and their uneven ends, an activation conversion
// and the torch ops between; at decode an expert sees a token or two, so those are a large part of
// its time. A group instead converts each token's activations once, runs gate and up of all its
// experts in ONE parallel region (tasks: row groups of every expert's matrices), the gated unit,
// down of all in one more region, and one index_add into the layer's output.
//
// Each expert's result is run_expert's bit for bit: activation rows are converted one by one (a
// token's converted row is the same whichever rows are gathered around it), each product is the
// same matmul_rows call on the same rows (only its split into tasks differs, and rows are computed
// independently), the gated unit runs on each expert's rows as one tensor of run_expert's shape,
// and the biases and gate weights are single float operations. The contributions are added to the
// output in the members' order, as one call per expert in that order adds them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <torch/types.h>

#include "moe/engine/expert_call.h"

namespace ferry::moe {

// The most token rows (summed over the members) a group takes: its activations, gate, up and down
// outputs are float32 rows of I and H values, so this bounds a group's workspace (Qwen3-30B: 2.2
// MB; DeepSeek-V3: 6.8 MB) whatever the step's size. A decode step of 16 sequences at top-8 fills it.
constexpr std::int64_t kExpertGroupRows = 128;

// One expert of a group: its bytes in the kernels' layout, the tokens routed to it, its biases.
struct ExpertGroupMember {
  const std::byte* base;   // the expert's bytes, pinned by the caller while the group runs
  const ExpertWork* work;  // the caller's, alive during the call
  ExpertBias bias;
};

// The most rows a member takes. An expert of more (a prefill's) pays its call's fixed cost over
// enough work, and measured slower in a group: on 1,024 prompt tokens of the DeepSeek-V3 shape
// (~32 rows an expert) the experts' time per token rose 10-23 % grouped (Qwen3-30B's: -7 to +3 %),
// where at decode (1-2 rows an expert) it fell 3-44 % (bench/RESULTS.md, "Grouped expert calls").
constexpr std::int64_t kExpertGroupMemberRows = 8;

// Whether an expert of `layout` on `tokens` rows joins a group: at most kExpertGroupMemberRows,
// on the block kernels (auto_kernels; float32 experts of 8 tokens and more go to libtorch, one
// call each).
bool joins_expert_group(const ExpertLayout& layout, std::int64_t tokens);

// out[rows] += gate * expert(m[rows]) for every member, in the members' order, each as run_expert
// computes it. m [N, H] float32, contiguous; out [N, H].
void run_expert_group(const ExpertLayout& layout, const std::vector<ExpertGroupMember>& members, const torch::Tensor& m,
                      const MoeConfig& config, torch::Tensor& out);

}  // namespace ferry::moe
