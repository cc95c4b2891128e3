#include "moe/store/device_slots.h"

#include <algorithm>

#include "core/error.h"

namespace ferry::moe {

DeviceSlots::DeviceSlots(DeviceSlotsOptions options, SlotTransfers* transfers)
    : options_(options), transfers_(transfers) {
  FERRY_REQUIRE(options_.capacity_slots >= 1, "the device holds no expert (capacity 0)");
  FERRY_REQUIRE(options_.slot_bytes >= 1, "device slots of 0 bytes");
  FERRY_CHECK(transfers_ != nullptr);
  for (std::uint64_t s = options_.capacity_slots; s-- > 0;) free_.push_back(static_cast<int>(s));
}

DeviceSlots::Entry& DeviceSlots::at(ExpertId id, const char* what) {
  auto it = entries_.find(id);
  FERRY_CHECK(it != entries_.end(), what, " of an absent expert ", id.layer, "/", id.expert);
  return it->second;
}

int DeviceSlots::slot(ExpertId id) const {
  auto it = entries_.find(id);
  return it == entries_.end() ? -1 : it->second.slot;
}

int DeviceSlots::reserve(ExpertId id, bool speculative) {
  FERRY_CHECK(!contains(id), "expert ", id.layer, "/", id.expert, " reserved twice");
  if (free_.empty()) return -1;
  const int s = free_.back();
  free_.pop_back();
  entries_.emplace(id, Entry{s, 0, speculative});
  peak_ = std::max(peak_, used());
  return s;
}

bool DeviceSlots::evict(ExpertId id) {
  auto it = entries_.find(id);
  if (it == entries_.end() || it->second.pins > 0) return false;
  const int s = it->second.slot;
  transfers_->release(id, s);  // returns once nothing writes into the slot
  entries_.erase(it);
  free_.push_back(s);
  return true;
}

std::vector<ExpertId> DeviceSlots::evictable() const {
  std::vector<ExpertId> out;
  for (const auto& [id, e] : entries_)
    if (e.pins == 0) out.push_back(id);
  return out;
}

bool DeviceSlots::make_room(ExpertId incoming, EvictionAdvisor* advisor) {
  while (free_.empty()) {
    std::vector<ExpertId> arrived, moving;  // each in ExpertId order (the map's)
    for (const auto& [id, e] : entries_)
      if (e.pins == 0) (transfers_->arrived(id, e.slot) ? arrived : moving).push_back(id);
    const std::vector<ExpertId>& candidates = arrived.empty() ? moving : arrived;
    if (candidates.empty()) return false;
    const ExpertId victim = advisor ? advisor->choose_victim(candidates, incoming) : candidates.front();
    FERRY_CHECK(std::find(candidates.begin(), candidates.end(), victim) != candidates.end(),
                "policy chose a victim outside the candidates");
    evict(victim);
  }
  return true;
}

void DeviceSlots::pin(ExpertId id) { ++at(id, "pin").pins; }

void DeviceSlots::unpin(ExpertId id) {
  Entry& e = at(id, "unpin");
  FERRY_CHECK(e.pins > 0, "unpin of an unpinned expert ", id.layer, "/", id.expert);
  --e.pins;
}

bool DeviceSlots::take_speculative(ExpertId id) {
  Entry& e = at(id, "use");
  const bool was = e.speculative;
  e.speculative = false;
  return was;
}

void DeviceSlots::clear_speculative() {
  for (auto& [id, e] : entries_) e.speculative = false;
}

}  // namespace ferry::moe
