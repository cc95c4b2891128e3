#include "moe/engine/memory_plan.h"

#include <algorithm>

#include "core/error.h"
#include "core/units.h"
#include "moe/engine/engine_specs.h"

namespace ferry::moe {
namespace {

std::string bytes(std::uint64_t b) { return format_bytes(static_cast<double>(b)); }

// What the room leaves for the experts' budget, 0 when not even that.
std::uint64_t left_for_experts(const MemoryNeeds& n, const MemoryRoom& room) {
  const std::uint64_t other = n.host_copy_bytes + n.kv_bytes + n.workspace_bytes + n.dense_bytes;
  return room.bytes > other ? room.bytes - other : 0;
}

std::string accounting(const MemoryNeeds& n, const MemoryRoom& room) {
  std::string s = "this process may use " + bytes(room.bytes) + " (" + room.source + ")";
  if (n.dense_bytes) s += "; dense weights ~" + bytes(n.dense_bytes);
  if (n.host_copy_bytes) s += "; host copy of the experts " + bytes(n.host_copy_bytes);
  s += "; KV cache " + bytes(n.kv_bytes) + "; workspace " + bytes(n.workspace_bytes);
  return s;
}

}  // namespace

std::uint64_t step_workspace_bytes(std::int64_t tokens, std::int64_t context, std::int64_t hidden,
                                   std::int64_t intermediate, std::int64_t heads, std::int64_t vocab) {
  const auto T = static_cast<std::uint64_t>(std::max<std::int64_t>(tokens, 1));
  const auto S = static_cast<std::uint64_t>(std::max<std::int64_t>(std::min(tokens, context), 1));
  const std::uint64_t floats = T * (8 * static_cast<std::uint64_t>(hidden) + 3 * static_cast<std::uint64_t>(intermediate) +
                                    static_cast<std::uint64_t>(heads) * S + static_cast<std::uint64_t>(vocab));
  return 4 * floats + (std::uint64_t{32} << 20);
}

MemoryPlan plan_memory(const std::string& device_mem, const MemoryNeeds& n, const MemoryRoom& room) {
  FERRY_REQUIRE(n.expert_bytes > 0 && n.total_expert_bytes >= n.expert_bytes, "plan_memory: no experts");
  const std::uint64_t left = left_for_experts(n, room);
  const std::uint64_t fits = left / n.expert_bytes * n.expert_bytes;  // whole experts
  MemoryPlan p;
  const DeviceMem mem = parse_device_mem(device_mem);
  if (mem.automatic) {
    FERRY_REQUIRE(fits >= n.min_budget_bytes, "--device-mem auto: the model does not fit: one layer's active experts need ",
                  bytes(n.min_budget_bytes), " but ", accounting(n, room), " leave ", bytes(left),
                  " (give the process more memory, or lower --kv-mem)");
    p.budget_bytes = std::min(fits, n.total_expert_bytes);
    p.resident = p.budget_bytes >= n.total_expert_bytes;
    p.summary = p.resident ? "auto: every expert resident (" + bytes(n.total_expert_bytes) + "; " + room.source + ")"
                           : "auto: " + bytes(p.budget_bytes) + " of " + bytes(n.total_expert_bytes) +
                                 " of experts, what fits (" + accounting(n, room) + ")";
    return p;
  }
  p.budget_bytes = mem.budget_bytes(n.total_expert_bytes);
  FERRY_REQUIRE(p.budget_bytes <= left, "--device-mem ", device_mem, " (", bytes(p.budget_bytes),
                ") does not fit in memory: ", accounting(n, room), "; at most ", bytes(fits),
                " is left for experts: use --device-mem auto or at most that");
  p.resident = p.budget_bytes >= n.total_expert_bytes;
  p.summary = "--device-mem " + device_mem;
  return p;
}

}  // namespace ferry::moe
