// PreSched is exact: on small random windows, and on routed layers with many candidates, its plan
// costs exactly the least presched_cost over every assignment of actions (exhaustive search), and
// the cost it reports is its plan's.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "moe/sched/presched.h"

namespace ferry::moe {
namespace {

using Actions = std::vector<std::vector<PreSchedAction>>;

PreSchedInstance random_instance(std::mt19937& rng) {
  std::uniform_real_distribution<double> u(0, 1);
  std::uniform_int_distribution<int> layers(1, 3), cands(0, 4), slots(0, 3), victims(0, 3);
  PreSchedInstance inst;
  inst.transfer_s = 0.5 + 4 * u(rng);
  inst.lead_s = 2 * u(rng);
  inst.link_free_s = u(rng) < 0.5 ? 0 : 3 * u(rng);
  inst.free_slots = slots(rng);
  const int v = victims(rng);
  for (int i = 0; i < v; ++i) inst.evict_cost_s.push_back(u(rng) < 0.4 ? 0.0 : 2 * u(rng));
  std::sort(inst.evict_cost_s.begin(), inst.evict_cost_s.end());
  inst.host_only_if_cheaper = u(rng) < 0.5;
  const int D = layers(rng);
  for (int j = 0; j < D; ++j) {
    PreSchedLayer lay;
    lay.layer = j;
    lay.dense_s = u(rng);
    const int m = cands(rng);
    for (int e = 0; e < m; ++e) {
      PreSchedCandidate c;
      c.expert = e;
      c.p = u(rng) < 0.3 ? 1.0 : u(rng);
      c.device_s = 0.05 + 0.5 * u(rng);
      c.host_s = 0.2 + 6 * u(rng);
      c.resident = u(rng) < 0.25;
      lay.candidates.push_back(c);
    }
    inst.layers.push_back(lay);
  }
  return inst;
}

// Every assignment: resident candidates stay resident, the others take each of the three actions.
double exhaustive(const PreSchedInstance& inst, Actions& best_plan) {
  Actions a(inst.layers.size());
  for (std::size_t j = 0; j < inst.layers.size(); ++j) a[j].assign(inst.layers[j].candidates.size(), PreSchedAction::kResident);
  double best = std::numeric_limits<double>::infinity();
  std::function<void(std::size_t, std::size_t)> rec = [&](std::size_t j, std::size_t i) {
    if (j == inst.layers.size()) {
      const double c = presched_cost(inst, a);
      if (c < best) best = c, best_plan = a;
      return;
    }
    if (i == inst.layers[j].candidates.size()) return rec(j + 1, 0);
    if (inst.layers[j].candidates[i].resident) {
      a[j][i] = PreSchedAction::kResident;
      return rec(j, i + 1);
    }
    for (auto act : {PreSchedAction::kPrefetch, PreSchedAction::kOnDemand, PreSchedAction::kHost}) {
      a[j][i] = act;
      rec(j, i + 1);
    }
  };
  rec(0, 0);
  return best;
}

TEST(PreSched, EqualsExhaustiveSearchOnRandomWindows) {
  std::mt19937 rng(12345);
  int with_prefetch = 0, with_host = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    const PreSchedInstance inst = random_instance(rng);
    Actions brute;
    const double want = exhaustive(inst, brute);
    const PreSchedPlan plan = presched_solve(inst);
    ASSERT_TRUE(std::isfinite(want));
    const double got = presched_cost(inst, plan.action);
    ASSERT_NEAR(got, want, 1e-9 * std::max(1.0, want)) << "trial " << trial;
    ASSERT_NEAR(plan.cost_s, got, 1e-9 * std::max(1.0, got)) << "trial " << trial;
    int k = 0;
    for (const auto& l : plan.action)
      for (auto x : l) k += x == PreSchedAction::kPrefetch, with_host += x == PreSchedAction::kHost;
    EXPECT_EQ(k, plan.prefetches);
    with_prefetch += k > 0;
  }
  // The instances exercise every action (the comparison is not trivially all on-demand).
  EXPECT_GT(with_prefetch, 200);
  EXPECT_GT(with_host, 200);
}

// A routed layer of a 256-expert, top-8 model at batch 2 or more: one layer whose candidates all
// have p = 1 and the same device time, more of them than the planner enumerates host sets for
// (2^m). Still exact against every assignment of actions.
TEST(PreSched, ManyRoutedCandidatesEqualExhaustiveSearch) {
  std::mt19937 rng(777);
  std::uniform_real_distribution<double> u(0, 1);
  std::uniform_int_distribution<int> tokens(1, 6), slots(0, 4);
  int with_host = 0;
  for (int trial = 0; trial < 12; ++trial) {
    PreSchedInstance inst;
    inst.transfer_s = 1 + 3 * u(rng);
    inst.free_slots = slots(rng);
    for (int i = 0; i < 3; ++i) inst.evict_cost_s.push_back(2 * u(rng));
    std::sort(inst.evict_cost_s.begin(), inst.evict_cost_s.end());
    inst.host_only_if_cheaper = trial % 2 == 0;
    PreSchedLayer lay;
    lay.dense_s = u(rng);
    const int m = 11 + trial % 3;
    for (int e = 0; e < m; ++e) lay.candidates.push_back({e, 1.0, 0.3, 0.5 * tokens(rng), u(rng) < 0.1});
    inst.layers = {lay};
    Actions brute;
    const double want = exhaustive(inst, brute);
    const PreSchedPlan plan = presched_solve(inst);
    const double got = presched_cost(inst, plan.action);
    ASSERT_NEAR(got, want, 1e-9 * std::max(1.0, want)) << "trial " << trial;
    ASSERT_NEAR(plan.cost_s, got, 1e-9 * std::max(1.0, got)) << "trial " << trial;
    for (auto x : plan.action[0]) with_host += x == PreSchedAction::kHost;
  }
  EXPECT_GT(with_host, 0);  // the host sets were exercised, not only all on the device
}

TEST(PreSched, CostModelCases) {
  PreSchedInstance inst;
  inst.transfer_s = 10;
  inst.lead_s = 20;  // the link has time to bring both experts before layer 1
  inst.free_slots = 2;
  PreSchedLayer lay;
  lay.dense_s = 1;
  lay.candidates = {{0, 1.0, 1, 100, false}, {1, 1.0, 1, 100, false}};
  inst.layers = {lay};
  auto plan = presched_solve(inst);
  EXPECT_EQ(plan.action[0][0], PreSchedAction::kPrefetch);
  EXPECT_EQ(plan.action[0][1], PreSchedAction::kPrefetch);
  EXPECT_DOUBLE_EQ(plan.cost_s, 20 + 1 + 2);
  // No room: the host is cheaper than a transfer for a cheap expert.
  inst.free_slots = 0;
  inst.layers[0].candidates[1].host_s = 2;
  plan = presched_solve(inst);
  EXPECT_EQ(plan.action[0][0], PreSchedAction::kOnDemand);
  EXPECT_EQ(plan.action[0][1], PreSchedAction::kHost);
  EXPECT_DOUBLE_EQ(plan.cost_s, 20 + 1 + 11);
  // One slot, two layers: the slot goes where the link can deliver in time and the expert is surer.
  inst.free_slots = 1;
  inst.lead_s = 0;
  PreSchedLayer later;
  later.dense_s = 30;
  later.candidates = {{5, 0.9, 1, 100, false}};
  inst.layers = {lay, later};
  inst.layers[0].candidates = {{0, 0.2, 1, 100, false}};
  plan = presched_solve(inst);
  EXPECT_EQ(plan.action[0][0], PreSchedAction::kOnDemand);
  EXPECT_EQ(plan.action[1][0], PreSchedAction::kPrefetch);
}

}  // namespace
}  // namespace ferry::moe
