#include "moe/store/expert_store.h"

#include <algorithm>

#include "core/clock.h"
#include "core/error.h"
#include "core/units.h"

namespace ferry::moe {

ExpertStore::ExpertStore(const HostPool* pool, std::unique_ptr<Link> link, ExpertStoreOptions options)
    : pool_(pool), link_(std::move(link)), options_(options), expert_bytes_(pool->layout().bytes()) {
  FERRY_REQUIRE(options_.budget_bytes >= expert_bytes_, "device budget ", format_bytes(options_.budget_bytes),
                " cannot hold one expert (", format_bytes(expert_bytes_), ")");
  const std::uint64_t total = pool_->total_bytes();
  std::uint64_t slots = std::min(options_.budget_bytes, total) / expert_bytes_;
  device_ = std::make_unique<std::byte[]>(slots * expert_bytes_);
  for (std::uint64_t s = slots; s-- > 0;) free_slots_.push_back(static_cast<int>(s));
  io_ = std::make_unique<IoExecutor>(link_.get());
  io_->start();
}

ExpertStore::~ExpertStore() {
  if (io_) io_->stop();
}

bool ExpertStore::start_transfer(ExpertId id, int priority, bool prefetched) {
  if (free_slots_.empty()) return false;
  Entry e;
  e.slot = free_slots_.back();
  free_slots_.pop_back();
  e.prefetched = prefetched;
  e.ticket = io_->submit(id, device_.get() + static_cast<std::uint64_t>(e.slot) * expert_bytes_, priority,
                         expert_bytes_);
  entries_.emplace(id, std::move(e));
  FERRY_CHECK(used_bytes() <= options_.budget_bytes, "device budget exceeded");
  stats_.peak_bytes = std::max(stats_.peak_bytes, used_bytes());
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

void ExpertStore::release(ExpertId id, Entry& e) {
  if (e.ticket.valid() && !e.ticket.ready()) {
    io_->cancel(e.ticket);  // returns once the I/O thread no longer writes into the slot
    ++stats_.cancelled;
  }
  free_slots_.push_back(e.slot);
  entries_.erase(id);
  ++stats_.evictions;
}

bool ExpertStore::evict(ExpertId id) {
  auto it = entries_.find(id);
  if (it == entries_.end() || it->second.pins > 0) return false;
  release(id, it->second);
  return true;
}

std::vector<ExpertId> ExpertStore::evictable() const {
  std::vector<ExpertId> out;
  for (const auto& [id, e] : entries_)
    if (e.pins == 0) out.push_back(id);
  std::sort(out.begin(), out.end());
  return out;
}

bool ExpertStore::resident(ExpertId id) const {
  auto it = entries_.find(id);
  return it != entries_.end() && it->second.ticket.ready();
}

bool ExpertStore::request(ExpertId id) {
  auto it = entries_.find(id);
  if (it != entries_.end()) {
    io_->set_priority(it->second.ticket, kPriorityDemand);
    return true;
  }
  while (free_slots_.empty()) {
    // Prefer resident victims (chosen by the policy); cancel an unpinned transfer only if none.
    std::vector<ExpertId> done, moving;
    for (const auto& [eid, e] : entries_)
      if (e.pins == 0) (e.ticket.ready() ? done : moving).push_back(eid);
    if (done.empty() && moving.empty()) return false;
    std::sort(done.begin(), done.end());
    std::sort(moving.begin(), moving.end());
    auto& pool = done.empty() ? moving : done;
    ExpertId victim = advisor_ ? advisor_->choose_victim(pool, id) : pool.front();
    FERRY_CHECK(std::find(pool.begin(), pool.end(), victim) != pool.end(), "policy chose a victim outside the candidates");
    evict(victim);
  }
  return start_transfer(id, kPriorityDemand, false);
}

void ExpertStore::pin(ExpertId id) {
  auto it = entries_.find(id);
  FERRY_CHECK(it != entries_.end(), "pin of an absent expert ", id.layer, "/", id.expert);
  ++it->second.pins;
}

void ExpertStore::unpin(ExpertId id) {
  auto it = entries_.find(id);
  FERRY_CHECK(it != entries_.end() && it->second.pins > 0, "unpin of an unpinned expert");
  --it->second.pins;
}

const float* ExpertStore::acquire(ExpertId id) {
  auto it = entries_.find(id);
  FERRY_CHECK(it != entries_.end(), "acquire of an absent expert ", id.layer, "/", id.expert);
  Entry& e = it->second;
  if (!e.ticket.ready()) {
    const double t0 = now_s();
    bool ok = e.ticket.wait();
    stats_.io_wait_s += now_s() - t0;
    FERRY_CHECK(ok, "transfer of pinned expert ", id.layer, "/", id.expert, " was cancelled");
  } else {
    e.ticket.wait();  // rethrows a link error
  }
  if (e.prefetched) {
    ++stats_.prefetches_used;
    e.prefetched = false;
  }
  return reinterpret_cast<const float*>(device_.get() + static_cast<std::uint64_t>(e.slot) * expert_bytes_);
}

void ExpertStore::preload(const std::vector<ExpertId>& ids) {
  for (ExpertId id : ids) {
    if (contains(id)) continue;
    if (!start_transfer(id, kPriorityPrefetch, false)) break;
  }
  for (auto& [id, e] : entries_) e.ticket.wait();
}

StoreStats ExpertStore::stats() const {
  StoreStats s = stats_;
  s.bytes_moved = io_->bytes_moved() - base_bytes_moved_;
  s.link_busy_s = io_->busy_s() - base_busy_s_;
  return s;
}

void ExpertStore::reset_stats() {
  stats_ = StoreStats{};
  stats_.peak_bytes = used_bytes();
  base_bytes_moved_ = io_->bytes_moved();
  base_busy_s_ = io_->busy_s();
}

}  // namespace ferry::moe
