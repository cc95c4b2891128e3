// The prefetch-with-room loop the prefetching policies share (sched/prefetch_room.h): wants are
// queued in order, resident ones skipped; a full cache evicts the rule's victim among the experts
// its filter lets go, and the loop stops when none may leave; the static placements' start takes
// the most routed experts and evicts nothing.
#include <gtest/gtest.h>

#include <vector>

#include "moe/sched/prefetch_room.h"
#include "moe/store/device_slots.h"

namespace ferry::moe {
namespace {

using Ids = std::vector<ExpertId>;

// A cache of `capacity` experts on DeviceSlots whose transfers complete at once; logs prefetches.
class LogCache : public ExpertCache, private SlotTransfers {
 public:
  explicit LogCache(std::uint64_t capacity) : slots_({capacity, 1}, this) {}
  bool contains(ExpertId id) const override { return slots_.contains(id); }
  bool prefetch(ExpertId id, int priority) override {
    if (contains(id) || slots_.reserve(id, true) < 0) return false;
    prefetched.push_back(id);
    priorities.push_back(priority);
    return true;
  }
  bool evict(ExpertId id) override {
    if (!slots_.evict(id)) return false;
    evicted.push_back(id);
    return true;
  }
  std::vector<ExpertId> evictable() const override { return slots_.evictable(); }
  std::uint64_t budget_bytes() const override { return slots_.budget_bytes(); }
  std::uint64_t used_bytes() const override { return slots_.used_bytes(); }
  std::uint64_t expert_bytes() const override { return slots_.slot_bytes(); }
  void pin(ExpertId id) { slots_.pin(id); }

  Ids prefetched, evicted;
  std::vector<int> priorities;

 private:
  bool arrived(ExpertId, int) const override { return true; }
  void release(ExpertId, int) override {}
  DeviceSlots slots_;
};

// Any expert not of the incoming one's layer may leave; the last candidate does.
VictimRule other_layer_last() {
  return {[](ExpertId c, ExpertId incoming) { return c.layer != incoming.layer; },
          [](std::span<const ExpertId> c, ExpertId) { return c.back(); }};
}

TEST(PrefetchRoom, QueuesInOrderSkippingResidentOnes) {
  LogCache cache(4);
  cache.prefetch({0, 1}, 100);
  cache.prefetched.clear();
  cache.priorities.clear();
  Ids queued;
  const std::vector<PrefetchWant> wants = {{{1, 2}, 101}, {{0, 1}, 100}, {{1, 0}, 101}};
  EXPECT_EQ(prefetch_with_room(cache, wants, other_layer_last(), [&](ExpertId id) { queued.push_back(id); }), 2u);
  EXPECT_EQ(cache.prefetched, (Ids{{1, 2}, {1, 0}}));
  EXPECT_EQ(cache.priorities, (std::vector<int>{101, 101}));
  EXPECT_EQ(queued, cache.prefetched);
  EXPECT_TRUE(cache.evicted.empty()) << "room was free";
}

TEST(PrefetchRoom, FullCacheEvictsTheRulesVictimAndStopsWhenNoneMayLeave) {
  LogCache cache(3);
  for (ExpertId id : {ExpertId{0, 0}, ExpertId{0, 1}, ExpertId{2, 0}}) cache.prefetch(id, 100);
  cache.pin({0, 0});
  cache.prefetched.clear();
  // Victims are unpinned and not of the incoming layer, the last of them leaves: (2, 0) for (1, 5),
  // (0, 1) for (1, 6); for (1, 7) none may leave, so it stops there and (3, 0) is not looked at.
  const std::vector<PrefetchWant> wants = {{{1, 5}}, {{1, 6}}, {{1, 7}}, {{3, 0}}};
  EXPECT_EQ(prefetch_with_room(cache, wants, other_layer_last()), 2u);
  EXPECT_EQ(cache.evicted, (Ids{{2, 0}, {0, 1}}));
  EXPECT_EQ(cache.prefetched, (Ids{{1, 5}, {1, 6}}));
  cache.pin({1, 5});
  cache.pin({1, 6});
  EXPECT_EQ(prefetch_with_room(cache, std::vector<PrefetchWant>{{{3, 1}}}, other_layer_last()), 0u)
      << "every expert pinned: nothing leaves, nothing is queued";
  EXPECT_FALSE(find_victim(cache, other_layer_last(), {3, 1}).has_value());
}

TEST(PrefetchRoom, VictimIsPickedAmongWhatTheFilterLetsGoInIdOrder) {
  LogCache cache(4);
  for (ExpertId id : {ExpertId{3, 1}, ExpertId{0, 2}, ExpertId{2, 2}, ExpertId{2, 0}}) cache.prefetch(id, 100);
  Ids offered;
  const VictimRule rule{[](ExpertId c, ExpertId) { return c.expert != 2; },
                        [&](std::span<const ExpertId> c, ExpertId) {
                          offered.assign(c.begin(), c.end());
                          return c.front();
                        }};
  EXPECT_EQ(find_victim(cache, rule, {5, 5}), (ExpertId{2, 0}));
  EXPECT_EQ(offered, (Ids{{2, 0}, {3, 1}}));
  EXPECT_TRUE(cache.evicted.empty()) << "find_victim evicts nothing";
}

TEST(PrefetchRoom, HottestStartTakesTheMostRoutedAndEvictsNothing) {
  LogCache cache(3);
  PolicyContext ctx;
  ctx.cache = &cache;
  ctx.num_layers = 2;
  ctx.num_experts = 3;
  // [layer * E + e]: (1, 2) most, then (0, 1); the rest tie and spread over layers, expert order.
  const std::vector<std::uint64_t> counts = {0, 5, 0, 0, 0, 9};
  const Ids hot = prefetch_hottest(ctx, counts, 3);
  EXPECT_EQ(hot, (Ids{{1, 2}, {0, 1}, {0, 0}}));
  EXPECT_EQ(cache.prefetched, hot);
  EXPECT_EQ(cache.priorities, (std::vector<int>{kPriorityPrefetch + 1, kPriorityPrefetch, kPriorityPrefetch}));
  EXPECT_EQ(prefetch_hottest(ctx, {}, 8).size(), 6u) << "no counts: every expert, spread over layers";
  EXPECT_TRUE(cache.evicted.empty());
  EXPECT_EQ(cache.prefetched.size(), 3u) << "the cache was full: nothing more was queued";
}

}  // namespace
}  // namespace ferry::moe
