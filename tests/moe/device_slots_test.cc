// DeviceSlots, the one slot-and-victim rule behind the ExpertStore, the simulator and the replay:
// victims are arrived experts before transfers in flight, offered in ExpertId order; a demand load
// is refused when every expert is pinned; a policy's victim outside the candidates is a bug caught
// before anything leaves; the peak counts reservations, not arrivals.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "core/error.h"
#include "moe/store/device_slots.h"

namespace ferry::moe {
namespace {

// The owner: every expert has arrived but those in `in_flight`; leaving is logged.
class FakeTransfers : public SlotTransfers {
 public:
  bool arrived(ExpertId id, int) const override { return in_flight.count(id) == 0; }
  void release(ExpertId id, int) override { released.push_back(id); }
  std::set<ExpertId> in_flight;
  std::vector<ExpertId> released;
};

// Records the candidates it is offered and answers `answer` (or the last candidate when unset).
class RecordingAdvisor : public EvictionAdvisor {
 public:
  ExpertId choose_victim(std::span<const ExpertId> candidates, ExpertId incoming) override {
    offered.assign(candidates.begin(), candidates.end());
    last_incoming = incoming;
    ++calls;
    return answer_set ? answer : candidates.back();
  }
  void answer_with(ExpertId id) { answer = id, answer_set = true; }
  std::vector<ExpertId> offered;
  ExpertId last_incoming{-1, -1};
  int calls = 0;

 private:
  ExpertId answer;
  bool answer_set = false;
};

using Ids = std::vector<ExpertId>;

TEST(DeviceSlots, VictimsAreArrivedExpertsFirstInIdOrder) {
  FakeTransfers t;
  DeviceSlots slots({4, 100}, &t);
  // Reserved out of order; (0,5) and (0,1) still in flight.
  for (ExpertId id : {ExpertId{2, 0}, ExpertId{0, 5}, ExpertId{1, 3}, ExpertId{0, 1}})
    ASSERT_GE(slots.reserve(id, false), 0);
  t.in_flight = {{0, 5}, {0, 1}};
  RecordingAdvisor advisor;
  ASSERT_TRUE(slots.make_room({3, 3}, &advisor));
  EXPECT_EQ(advisor.offered, (Ids{{1, 3}, {2, 0}})) << "arrived only, sorted";
  EXPECT_EQ(advisor.last_incoming, (ExpertId{3, 3}));
  EXPECT_EQ(t.released, (Ids{{2, 0}}));
  EXPECT_FALSE(slots.contains({2, 0}));
  EXPECT_EQ(slots.free(), 1u);

  // Room already: nobody is asked, nothing leaves.
  ASSERT_TRUE(slots.make_room({3, 3}, &advisor));
  EXPECT_EQ(advisor.calls, 1);

  // Without a policy the first candidate leaves: (1,3) is the only arrived one.
  ASSERT_GE(slots.reserve({3, 3}, false), 0);
  t.in_flight.insert({3, 3});
  ASSERT_TRUE(slots.make_room({4, 0}, nullptr));
  EXPECT_EQ(t.released, (Ids{{2, 0}, {1, 3}}));

  // Nothing arrived: the transfers in flight are the candidates, in order.
  ASSERT_GE(slots.reserve({4, 0}, false), 0);
  t.in_flight.insert({4, 0});
  ASSERT_TRUE(slots.make_room({5, 0}, &advisor));
  EXPECT_EQ(advisor.offered, (Ids{{0, 1}, {0, 5}, {3, 3}, {4, 0}}));
  EXPECT_EQ(t.released.back(), (ExpertId{4, 0}));
}

TEST(DeviceSlots, PinnedExpertsNeverLeaveAndAllPinnedIsRefused) {
  FakeTransfers t;
  DeviceSlots slots({2, 1}, &t);
  ASSERT_GE(slots.reserve({0, 0}, false), 0);
  ASSERT_GE(slots.reserve({0, 1}, false), 0);
  slots.pin({0, 0});
  RecordingAdvisor advisor;
  ASSERT_TRUE(slots.make_room({1, 0}, &advisor));
  EXPECT_EQ(advisor.offered, (Ids{{0, 1}})) << "the pinned expert is no candidate";
  ASSERT_GE(slots.reserve({1, 0}, false), 0);
  slots.pin({1, 0});
  slots.pin({1, 0});
  slots.unpin({1, 0});  // pins count: still pinned once

  EXPECT_FALSE(slots.evict({0, 0}));
  EXPECT_TRUE(slots.evictable().empty());
  const int calls = advisor.calls;
  EXPECT_FALSE(slots.make_room({2, 0}, &advisor));
  EXPECT_EQ(advisor.calls, calls) << "no candidates: the policy is not asked";
  EXPECT_EQ(t.released, (Ids{{0, 1}}));
  EXPECT_EQ(slots.reserve({2, 0}, false), -1) << "reserving never evicts";

  slots.unpin({1, 0});
  EXPECT_EQ(slots.evictable(), (Ids{{1, 0}}));
  EXPECT_THROW(slots.unpin({1, 0}), InternalError);
  EXPECT_THROW(slots.pin({7, 7}), InternalError);
}

TEST(DeviceSlots, AVictimOutsideTheCandidatesIsRefused) {
  FakeTransfers t;
  DeviceSlots slots({2, 1}, &t);
  ASSERT_GE(slots.reserve({0, 0}, false), 0);
  ASSERT_GE(slots.reserve({0, 1}, false), 0);
  slots.pin({0, 1});
  t.in_flight = {{0, 0}};
  RecordingAdvisor advisor;
  for (ExpertId bad : {ExpertId{0, 1} /* pinned */, ExpertId{5, 5} /* absent */, ExpertId{3, 0} /* incoming */}) {
    advisor.answer_with(bad);
    EXPECT_THROW(slots.make_room({3, 0}, &advisor), InternalError);
    EXPECT_TRUE(t.released.empty());
    EXPECT_EQ(slots.used(), 2u);
  }
  // An arrived candidate exists: one in flight is refused too.
  slots.unpin({0, 1});
  advisor.answer_with({0, 0});
  EXPECT_THROW(slots.make_room({3, 0}, &advisor), InternalError);
  EXPECT_TRUE(t.released.empty());
}

TEST(DeviceSlots, PeakCountsReservationsAndSlotsAreReused) {
  FakeTransfers t;
  DeviceSlots slots({3, 1000}, &t);
  EXPECT_EQ(slots.budget_bytes(), 3000u);
  std::set<int> taken;
  for (int e = 0; e < 3; ++e) taken.insert(slots.reserve({0, e}, false));
  EXPECT_EQ(taken, (std::set<int>{0, 1, 2}));
  EXPECT_EQ(slots.reserve({0, 3}, false), -1);
  EXPECT_EQ(slots.used_bytes(), 3000u);
  EXPECT_EQ(slots.peak(), 3u);

  ASSERT_TRUE(slots.evict({0, 1}));
  ASSERT_TRUE(slots.evict({0, 2}));
  EXPECT_EQ(slots.slot({0, 1}), -1);
  EXPECT_EQ(slots.used(), 1u);
  EXPECT_EQ(slots.peak(), 3u) << "the peak stays";
  slots.reset_peak();
  EXPECT_EQ(slots.peak(), 1u) << "a reset starts from what is reserved now";
  ASSERT_GE(slots.reserve({1, 0}, false), 0);
  EXPECT_EQ(slots.peak(), 2u);
  const int freed = slots.slot({1, 0});
  ASSERT_TRUE(slots.evict({1, 0}));
  EXPECT_EQ(slots.reserve({1, 1}, false), freed) << "a freed slot is reused";
  EXPECT_NE(slots.slot({1, 1}), slots.slot({0, 0}));
}

TEST(DeviceSlots, ASpeculativeReservationIsReportedOnce) {
  FakeTransfers t;
  DeviceSlots slots({2, 1}, &t);
  ASSERT_GE(slots.reserve({0, 0}, true), 0);
  ASSERT_GE(slots.reserve({0, 1}, false), 0);
  EXPECT_TRUE(slots.take_speculative({0, 0}));
  EXPECT_FALSE(slots.take_speculative({0, 0}));
  EXPECT_FALSE(slots.take_speculative({0, 1}));
  ASSERT_TRUE(slots.evict({0, 0}));
  ASSERT_GE(slots.reserve({0, 0}, true), 0);
  slots.clear_speculative();
  EXPECT_FALSE(slots.take_speculative({0, 0}));
}

TEST(DeviceSlots, RefusesAnEmptyDevice) {
  FakeTransfers t;
  EXPECT_THROW(DeviceSlots({0, 1}, &t), InvalidArgument);
  EXPECT_THROW(DeviceSlots({1, 0}, &t), InvalidArgument);
}

}  // namespace
}  // namespace ferry::moe
