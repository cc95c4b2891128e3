// The tiered expert store: every expert in the host pool; a device cache holding at most
// `budget_bytes` of experts in DeviceSlots (device_slots.h: slots reserved before a transfer
// starts, so the budget holds at every instant; the peak; the victim rule), whose transfers run on
// the AsyncIO thread through a Link: an expert has arrived when its I/O ticket is ready.
// Single-threaded API (the compute thread); only the IoExecutor runs concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "moe/store/device_slots.h"
#include "moe/store/expert_cache.h"
#include "moe/store/host_pool.h"
#include "moe/store/io_executor.h"
#include "moe/store/link.h"

namespace ferry::moe {

struct ExpertStoreOptions {
  std::uint64_t budget_bytes = 0;  // device bytes for routed experts; must hold at least one expert
};

struct StoreStats {
  std::uint64_t bytes_moved = 0;        // bytes the link copied (cancelled transfers: the part done)
  std::uint64_t loads = 0;              // transfers started for demand misses
  std::uint64_t prefetches = 0;         // speculative transfers started
  std::uint64_t prefetches_used = 0;    // prefetched experts later used
  std::uint64_t cancelled = 0;          // transfers cancelled by evict()
  std::uint64_t evictions = 0;
  std::uint64_t peak_bytes = 0;         // most device bytes ever reserved
  double io_wait_s = 0;                 // compute time blocked in acquire()
  double link_busy_s = 0;               // time the link was transferring
};

class ExpertStore : public ExpertCache, private SlotTransfers {
 public:
  // `pool` gives the experts' size and count (the link reads their bytes). Throws InvalidArgument
  // if the budget holds no expert.
  ExpertStore(const HostPool* pool, std::unique_ptr<Link> link, ExpertStoreOptions options);
  ~ExpertStore() override;

  // The policy that picks victims for demand loads (outlives the store's use of it).
  void set_advisor(EvictionAdvisor* advisor) { advisor_ = advisor; }

  // ExpertCache
  bool contains(ExpertId id) const override { return slots_.contains(id); }
  bool prefetch(ExpertId id, int priority) override;
  bool evict(ExpertId id) override { return slots_.evict(id); }
  std::vector<ExpertId> evictable() const override { return slots_.evictable(); }
  std::uint64_t budget_bytes() const override { return options_.budget_bytes; }
  std::uint64_t used_bytes() const override { return slots_.used_bytes(); }
  std::uint64_t expert_bytes() const override { return slots_.slot_bytes(); }

  // Demand load: resident or queued → raises priority; otherwise makes room (DeviceSlots::make_room,
  // asking the advisor) and starts the transfer. Returns false when everything is pinned.
  bool request(ExpertId id);
  bool resident(ExpertId id) const;  // bytes in place (transfer done)
  // Pinned experts are never evicted (the current layer's experts until computed).
  void pin(ExpertId id) { slots_.pin(id); }
  void unpin(ExpertId id) { slots_.unpin(id); }
  // Waits for the expert's bytes (time counted as io_wait) and returns the device copy.
  const std::byte* acquire(ExpertId id);
  // Synchronously loads experts in order until the budget is full (the all-resident setup).
  void preload(const std::vector<ExpertId>& ids);

  const Link& link() const { return *link_; }
  StoreStats stats() const;
  void reset_stats();

 private:
  bool start_transfer(ExpertId id, int priority, bool prefetched);
  std::byte* slot_memory(int slot) const { return device_.get() + static_cast<std::uint64_t>(slot) * expert_bytes(); }
  // SlotTransfers: an expert has arrived when its ticket is ready; leaving cancels its transfer.
  bool arrived(ExpertId id, int slot) const override;
  void release(ExpertId id, int slot) override;

  const HostPool* pool_;  // outlives the store (the engine owns both)
  std::unique_ptr<Link> link_;
  ExpertStoreOptions options_;
  DeviceSlots slots_;
  std::unique_ptr<std::byte[]> device_;  // the emulated device memory: slots x expert_bytes
  std::vector<IoTicket> tickets_;        // per slot: the transfer into it (invalid when free)
  EvictionAdvisor* advisor_ = nullptr;  // the engine's policy; outlives the store's use
  StoreStats stats_;
  std::uint64_t base_bytes_moved_ = 0;  // io_ counters at the last reset_stats()
  double base_busy_s_ = 0;
  std::unique_ptr<IoExecutor> io_;  // declared last: stopped first, before the slots go away
};

}  // namespace ferry::moe
