#include "moe/sched/presched.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/error.h"

namespace ferry::moe {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Host sets of a layer with at most this many non-resident candidates are enumerated (2^m);
// beyond, only the prefixes of the host order below are tried.
constexpr int kMaxEnumeratedHost = 10;

bool host_allowed(const PreSchedInstance& inst, const PreSchedCandidate& c) {
  return !inst.host_only_if_cheaper || c.host_s <= inst.transfer_s + c.device_s;
}

double eviction_cost(const PreSchedInstance& inst, int prefetches) {
  double s = 0;
  for (int i = 0; i < prefetches - inst.free_slots; ++i) s += inst.evict_cost_s[i];
  return s;
}

int max_prefetches(const PreSchedInstance& inst) {
  return std::max(0, inst.free_slots) + static_cast<int>(inst.evict_cost_s.size());
}

// One state of the programme after a layer: prefetches so far, clock, link free time, and how it
// was reached (for the plan).
struct State {
  int K = 0;
  double t = 0, L = 0;
  int parent = -1;
  std::uint32_t host_mask = 0;  // enumerated layer: bit i = the layer's i-th candidate runs on the host
  int host_prefix = 0;          // other layers: the first host_prefix of its host order do
  int k = 0;
};

// Keeps the states no other dominates: (K', t', L'-t') <= (K, t, L-t) componentwise.
void prune(std::vector<State>& states, int max_k) {
  std::sort(states.begin(), states.end(), [](const State& a, const State& b) {
    if (a.t != b.t) return a.t < b.t;
    if (a.L - a.t != b.L - b.t) return a.L - a.t < b.L - b.t;
    return a.K < b.K;
  });
  std::vector<double> best_lag(max_k + 1, kInf);  // least lag among kept states with K
  std::vector<State> kept;
  for (const State& s : states) {
    const double lag = s.L - s.t;
    bool dominated = false;
    for (int k = 0; k <= s.K && !dominated; ++k) dominated = best_lag[k] <= lag;
    if (dominated) continue;
    best_lag[s.K] = lag;
    kept.push_back(s);
  }
  states.swap(kept);
}

}  // namespace

double presched_cost(const PreSchedInstance& inst, const std::vector<std::vector<PreSchedAction>>& action) {
  FERRY_CHECK_EQ(action.size(), inst.layers.size(), "layers of the plan vs the window");
  const double T = inst.transfer_s;
  double t = inst.lead_s, L = inst.link_free_s;
  int K = 0;
  for (std::size_t j = 0; j < inst.layers.size(); ++j) {
    const auto& lay = inst.layers[j];
    FERRY_CHECK_EQ(action[j].size(), lay.candidates.size(), "plan layer ", j);
    const double s = t + lay.dense_s;
    int k = 0;
    double device = 0, host = 0, q = 0;
    for (std::size_t i = 0; i < lay.candidates.size(); ++i) {
      const auto& c = lay.candidates[i];
      const PreSchedAction a = action[j][i];
      if (c.resident != (a == PreSchedAction::kResident)) return kInf;
      switch (a) {
        case PreSchedAction::kResident: device += c.p * c.device_s; break;
        case PreSchedAction::kPrefetch: device += c.p * c.device_s; ++k; break;
        case PreSchedAction::kOnDemand: device += c.p * (T + c.device_s); q += c.p * T; break;
        case PreSchedAction::kHost:
          if (!host_allowed(inst, c)) return kInf;
          host += c.p * c.host_s;
          break;
      }
    }
    L += k * T;
    const double stall = k > 0 ? std::max(0.0, L - s) : 0.0;
    t = s + std::max(stall + device, host);
    L += q;
    K += k;
  }
  if (K > max_prefetches(inst)) return kInf;
  return t + eviction_cost(inst, K);
}

PreSchedPlan presched_solve(const PreSchedInstance& inst) {
  const double T = inst.transfer_s;
  const int max_k = max_prefetches(inst);
  const std::size_t D = inst.layers.size();
  std::vector<std::vector<State>> layers(D + 1);
  layers[0].push_back(State{0, inst.lead_s, inst.link_free_s, -1, 0, 0, 0});
  PreSchedPlan plan;
  // Per layer: non-resident candidates by descending probability, and prefix sums over them.
  std::vector<std::vector<int>> order(D);
  // Per layer past kMaxEnumeratedHost candidates: the host-eligible ones (positions in order[j]) by
  // host time over on-demand time, h / (T + d), ascending. Their prefixes are the host sets tried:
  // exact when the candidates share p and d (the routed layer's one-layer plan, p = 1), since then
  // the device side depends only on how many run on the host, and the cheapest on the host are best.
  std::vector<std::vector<int>> host_order(D);
  std::vector<char> on_host;
  for (std::size_t j = 0; j < D; ++j) {
    const auto& lay = inst.layers[j];
    double resident = 0;
    std::vector<int>& ord = order[j];
    for (std::size_t i = 0; i < lay.candidates.size(); ++i) {
      if (lay.candidates[i].resident)
        resident += lay.candidates[i].p * lay.candidates[i].device_s;
      else
        ord.push_back(static_cast<int>(i));
    }
    std::stable_sort(ord.begin(), ord.end(), [&](int a, int b) { return lay.candidates[a].p > lay.candidates[b].p; });
    const int m = static_cast<int>(ord.size());
    const bool enumerated = m <= kMaxEnumeratedHost;
    std::uint32_t eligible = 0;
    for (int i = 0; i < m; ++i)
      if (host_allowed(inst, lay.candidates[ord[i]])) {
        if (enumerated) eligible |= 1u << i;
        else host_order[j].push_back(i);
      }
    auto host_rank = [&](int i) {
      const auto& c = lay.candidates[ord[i]];
      return c.host_s / (T + c.device_s);
    };
    std::stable_sort(host_order[j].begin(), host_order[j].end(), [&](int a, int b) { return host_rank(a) < host_rank(b); });
    std::vector<State>& next = layers[j + 1];
    std::vector<int> rest;
    rest.reserve(m);
    for (std::size_t si = 0; si < layers[j].size(); ++si) {
      const State& st = layers[j][si];
      const double s = st.t + lay.dense_s;
      // The states of one host set (on_host[i]: the i-th candidate runs on the host).
      auto expand = [&](std::uint32_t mask, int prefix) {
        double host = 0, od_device = 0, od_link = 0;
        rest.clear();
        for (int i = 0; i < m; ++i) {
          const auto& c = lay.candidates[ord[i]];
          if (on_host[i]) {
            host += c.p * c.host_s;
          } else {
            rest.push_back(ord[i]);
            od_device += c.p * (T + c.device_s);
            od_link += c.p * T;
          }
        }
        // k = prefetches: the k most probable of the rest; the others load on demand.
        double pre_device = 0;
        for (int k = 0; k <= static_cast<int>(rest.size()) && st.K + k <= max_k; ++k) {
          if (k > 0) {
            const auto& c = lay.candidates[rest[k - 1]];
            pre_device += c.p * c.device_s;
            od_device -= c.p * (T + c.device_s);
            od_link -= c.p * T;
          }
          const double R = st.L + k * T;
          const double stall = k > 0 ? std::max(0.0, R - s) : 0.0;
          const double t = s + std::max(stall + resident + pre_device + std::max(0.0, od_device), host);
          next.push_back(State{st.K + k, t, R + std::max(0.0, od_link), static_cast<int>(si), mask, prefix, k});
          ++plan.states;
        }
      };
      on_host.assign(m, 0);
      if (enumerated) {
        // Every host subset of the eligible candidates (submask enumeration, including the empty one).
        for (std::uint32_t mask = eligible;; mask = (mask - 1) & eligible) {
          for (int i = 0; i < m; ++i) on_host[i] = mask >> i & 1u;
          expand(mask, 0);
          if (mask == 0) break;
        }
      } else {
        for (std::size_t n = 0; n <= host_order[j].size(); ++n) {
          if (n > 0) on_host[host_order[j][n - 1]] = 1;
          expand(0, static_cast<int>(n));
        }
      }
    }
    prune(next, max_k);
  }
  // The best end state, then back along the parents.
  int best = -1;
  double best_cost = kInf;
  for (std::size_t i = 0; i < layers[D].size(); ++i) {
    const double c = layers[D][i].t + eviction_cost(inst, layers[D][i].K);
    if (c < best_cost) best_cost = c, best = static_cast<int>(i);
  }
  plan.action.resize(D);
  plan.cost_s = D == 0 ? inst.lead_s : best_cost;
  for (int j = static_cast<int>(D) - 1, si = best; j >= 0; --j) {
    const State& st = layers[j + 1][si];
    const auto& lay = inst.layers[j];
    auto& act = plan.action[j];
    act.assign(lay.candidates.size(), PreSchedAction::kResident);
    on_host.assign(order[j].size(), 0);
    for (int i = 0; i < static_cast<int>(order[j].size()) && i < kMaxEnumeratedHost; ++i) on_host[i] = st.host_mask >> i & 1u;
    for (int n = 0; n < st.host_prefix; ++n) on_host[host_order[j][n]] = 1;
    int taken = 0;
    for (std::size_t i = 0; i < order[j].size(); ++i) {
      const int c = order[j][i];
      if (on_host[i])
        act[c] = PreSchedAction::kHost;
      else
        act[c] = taken++ < st.k ? PreSchedAction::kPrefetch : PreSchedAction::kOnDemand;
    }
    plan.prefetches += st.k;
    si = st.parent;
  }
  return plan;
}

}  // namespace ferry::moe
