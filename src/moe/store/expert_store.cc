#include "moe/store/expert_store.h"

#include <algorithm>

#include "core/clock.h"
#include "core/error.h"
#include "core/units.h"

namespace ferry::moe {

namespace {

// The store's slots: as many experts as the budget holds (no more than the pool has).
DeviceSlotsOptions slots_for(const HostPool& pool, std::uint64_t budget_bytes) {
  const std::uint64_t expert_bytes = pool.layout().bytes();
  FERRY_REQUIRE(budget_bytes >= expert_bytes, "device budget ", format_bytes(budget_bytes),
                " cannot hold one expert (", format_bytes(expert_bytes), ")");
  return {std::min(budget_bytes, pool.total_bytes()) / expert_bytes, expert_bytes};
}

}  // namespace

ExpertStore::ExpertStore(const HostPool* pool, std::unique_ptr<Link> link, ExpertStoreOptions options)
    : pool_(pool),
      link_(std::move(link)),
      options_(options),
      slots_(slots_for(*pool, options.budget_bytes), this),
      device_(std::make_unique<std::byte[]>(slots_.budget_bytes())),
      tickets_(slots_.capacity()) {
  io_ = std::make_unique<IoExecutor>(link_.get());
  io_->start();
}

ExpertStore::~ExpertStore() {
  if (io_) io_->stop();
}

bool ExpertStore::start_transfer(ExpertId id, int priority, bool prefetched) {
  const int slot = slots_.reserve(id, prefetched);
  if (slot < 0) return false;
  tickets_[slot] = io_->submit(id, slot_memory(slot), priority, pool_->expert_bytes(id));
  if (prefetched)
    ++stats_.prefetches;
  else
    ++stats_.loads;
  return true;
}

bool ExpertStore::prefetch(ExpertId id, int priority) {
  if (contains(id)) return false;
  return start_transfer(id, priority, true);
}

bool ExpertStore::arrived(ExpertId, int slot) const { return tickets_[slot].ready(); }

void ExpertStore::release(ExpertId, int slot) {
  IoTicket& t = tickets_[slot];
  if (t.valid() && !t.ready()) {
    io_->cancel(t);  // returns once the I/O thread no longer writes into the slot
    ++stats_.cancelled;
  }
  t = IoTicket{};
  ++stats_.evictions;
}

bool ExpertStore::resident(ExpertId id) const {
  const int slot = slots_.slot(id);
  return slot >= 0 && tickets_[slot].ready();
}

bool ExpertStore::request(ExpertId id) {
  if (const int slot = slots_.slot(id); slot >= 0) {
    io_->set_priority(tickets_[slot], kPriorityDemand);
    return true;
  }
  if (!slots_.make_room(id, advisor_)) return false;
  return start_transfer(id, kPriorityDemand, false);
}

const std::byte* ExpertStore::acquire(ExpertId id) {
  const int slot = slots_.slot(id);
  FERRY_CHECK(slot >= 0, "acquire of an absent expert ", id.layer, "/", id.expert);
  const IoTicket& t = tickets_[slot];
  if (!t.ready()) {
    const double t0 = now_s();
    bool ok = t.wait();
    stats_.io_wait_s += now_s() - t0;
    FERRY_CHECK(ok, "transfer of pinned expert ", id.layer, "/", id.expert, " was cancelled");
  } else {
    t.wait();  // rethrows a link error
  }
  if (slots_.take_speculative(id)) ++stats_.prefetches_used;
  return slot_memory(slot);
}

void ExpertStore::preload(const std::vector<ExpertId>& ids) {
  for (ExpertId id : ids) {
    if (contains(id)) continue;
    if (!start_transfer(id, kPriorityPrefetch, false)) break;
  }
  for (const IoTicket& t : tickets_)
    if (t.valid()) t.wait();
}

StoreStats ExpertStore::stats() const {
  StoreStats s = stats_;
  s.peak_bytes = slots_.peak() * expert_bytes();
  s.bytes_moved = io_->bytes_moved() - base_bytes_moved_;
  s.link_busy_s = io_->busy_s() - base_busy_s_;
  return s;
}

void ExpertStore::reset_stats() {
  stats_ = StoreStats{};
  slots_.clear_speculative();  // a prefetch started before counts in no statistics of what follows
  slots_.reset_peak();
  base_bytes_moved_ = io_->bytes_moved();
  base_busy_s_ = io_->busy_s();
}

}  // namespace ferry::moe
