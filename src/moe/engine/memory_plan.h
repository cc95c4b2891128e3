// How much memory the engine gives the routed experts (`--device-mem auto`, the default of
// `ferry moe generate`, `bench` and `serve`), and whether an explicit budget fits at all.
//
// On a CPU-only machine RAM is the device tier: an expert budget larger than what the process may
// still allocate gets it killed for memory, and a budget far below it streams from disk a model
// that fits. So the budget is sized from what this process may use (core/memory_room.h:
// MemAvailable and any cgroup limit), after what else it holds:
//
//   room(after the dense weights are loaded)  >=  budget + host copy + KV reserve + workspace
//
// where the host copy is the experts' host pool (0 when they stream from the model's file), the KV
// reserve what the caller's sequences may hold (--kv-mem), and the workspace one step's activations.
// auto: every expert resident (budget = all of them) when that fits, else the largest whole
// number of experts that does; an explicit budget that does not fit is refused, naming what would.
// Before anything is loaded the same check runs on the room at start minus an estimate of the
// dense weights (the file's bytes less the experts'), so a model whose dense part cannot fit is
// refused before it is read.
#pragma once

#include <cstdint>
#include <string>

#include "core/memory_room.h"

namespace ferry::moe {

// What besides the budget must fit, in bytes.
struct MemoryNeeds {
  std::uint64_t total_expert_bytes = 0;  // every routed expert in its device format
  std::uint64_t expert_bytes = 0;        // one expert's slot
  std::uint64_t min_budget_bytes = 0;    // one layer's active experts (top_k slots)
  std::uint64_t host_copy_bytes = 0;     // the host pool (0: experts stream from the model's file)
  std::uint64_t kv_bytes = 0;            // the KV cache reserve of the caller's sequences
  std::uint64_t workspace_bytes = 0;     // one step's activations and the allocator's slack
  std::uint64_t dense_bytes = 0;         // the dense weights still to load (0 once they are in the room)
};

struct MemoryPlan {
  std::uint64_t budget_bytes = 0;
  bool resident = false;  // every routed expert fits in the budget
  std::string summary;    // one line: the budget and why ("auto: every expert resident (room 21.9 GiB, MemAvailable)")
};

// `device_mem`: "auto", bytes ("256MiB") or a percentage of all experts ("50%"). Throws
// InvalidArgument, in one line naming --device-mem, what the room is and what would fit, when the
// budget (or, for auto, one layer's active experts) does not fit in `room`.
MemoryPlan plan_memory(const std::string& device_mem, const MemoryNeeds& needs, const MemoryRoom& room);

// The activations of one step of `tokens` tokens: the residual stream and its normalised copies,
// q/k/v and the attention output, one expert's gate/up/activation over every token (the experts
// run one after another), the attention scores over at most `context` positions and the logits, in
// float32; plus 32 MiB for libtorch's allocator and the I/O staging buffers. (tests/moe/
// memory_budget_cli.sh: its 4-layer hidden-1024 Q8_0 model, every expert resident, peaks at 419 MB,
// within 15 MB of its experts (321 MB), dense weights (12 MB) and the process at start (~74 MB).)
std::uint64_t step_workspace_bytes(std::int64_t tokens, std::int64_t context, std::int64_t hidden,
                                   std::int64_t intermediate, std::int64_t heads, std::int64_t vocab);

}  // namespace ferry::moe
