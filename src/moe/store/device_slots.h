// The device cache's slots and the victim rule, written once for the three caches that follow
// them: the ExpertStore (real copies on the AsyncIO thread), the simulator (transfers in simulated
// time) and the trace replay (transfers complete at once). At most `capacity_slots` experts, one
// slot each; a slot is reserved when its transfer is queued, so the budget holds at every instant
// and the peak is the most slots ever reserved. Pinned experts never leave.
//
// A demand load makes room by evicting, one at a time until a slot is free, a victim the policy
// chooses among the unpinned experts whose bytes have arrived, or, when none has, among the
// unpinned transfers still in flight (cancelling one wastes the bytes it moved; evicting an arrived
// one wastes nothing yet). Candidates are in ExpertId order, so that a policy's tie-break does not
// depend on the cache; without a policy the first candidate leaves. What "arrived" means and what
// leaving does (cancel an I/O ticket, stop a simulated job, nothing) is the owner's (SlotTransfers).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "moe/store/expert_cache.h"
#include "moe/trace/expert_id.h"

namespace ferry::moe {

// What the owner of the slots knows of the transfers into them.
class SlotTransfers {
 public:
  virtual ~SlotTransfers() = default;
  // The bytes of `id` (in `slot`) are in place: its transfer has completed.
  virtual bool arrived(ExpertId id, int slot) const = 0;
  // `id` leaves `slot`: stop its transfer if it still runs. The slot is free once this returns.
  virtual void release(ExpertId id, int slot) = 0;
};

struct DeviceSlotsOptions {
  std::uint64_t capacity_slots = 0;  // experts the device holds; at least one
  std::uint64_t slot_bytes = 0;      // bytes of one expert (expert_layout.h), or 1 to count experts only
};

class DeviceSlots {
 public:
  // `transfers` (the owner, which holds the slots as a member) outlives them. Throws
  // InvalidArgument for a capacity or slot size of 0.
  DeviceSlots(DeviceSlotsOptions options, SlotTransfers* transfers);

  std::uint64_t capacity() const { return options_.capacity_slots; }
  std::uint64_t used() const { return entries_.size(); }
  std::uint64_t free() const { return capacity() - used(); }
  std::uint64_t slot_bytes() const { return options_.slot_bytes; }
  std::uint64_t budget_bytes() const { return capacity() * slot_bytes(); }
  std::uint64_t used_bytes() const { return used() * slot_bytes(); }
  // The most slots reserved at once since construction or reset_peak().
  std::uint64_t peak() const { return peak_; }
  void reset_peak() { peak_ = used(); }

  // Reserved: resident or on its way.
  bool contains(ExpertId id) const { return entries_.count(id) > 0; }
  // The slot of `id`, or -1 when absent.
  int slot(ExpertId id) const;
  // Reserves a free slot for `id` (absent) and returns it; -1 when every slot is taken (it evicts
  // nothing). `speculative`: a prefetch, reported once by take_speculative().
  int reserve(ExpertId id, bool speculative);
  // Releases an unpinned expert; false if it is pinned or absent.
  bool evict(ExpertId id);
  // What evict() accepts now (arrived or in flight, unpinned), in ExpertId order.
  std::vector<ExpertId> evictable() const;
  // Evicts victims (the rule above) until a slot is free for `incoming`; false when every
  // reserved expert is pinned. `advisor` may be null (the first candidate leaves); it outlives the call.
  bool make_room(ExpertId incoming, EvictionAdvisor* advisor);

  void pin(ExpertId id);
  void unpin(ExpertId id);
  // True the first time a speculatively reserved expert is used (a prefetch that paid off).
  bool take_speculative(ExpertId id);
  // Every reserved expert counts as not speculative (a start-up fill).
  void clear_speculative();

 private:
  struct Entry {
    int slot = -1;
    int pins = 0;
    bool speculative = false;
  };
  Entry& at(ExpertId id, const char* what);

  DeviceSlotsOptions options_;
  SlotTransfers* transfers_;  // the owner of the slots, outlives them
  std::map<ExpertId, Entry> entries_;  // ordered: candidates come out sorted
  std::vector<int> free_;  // free slot indices, the next one at the back
  std::uint64_t peak_ = 0;
};

}  // namespace ferry::moe
