#include "moe/engine/expert_call.h"

#include <algorithm>

#include <torch/types.h>
#include <torch/utils.h>

#include "core/clock.h"
#include "moe/model/decoder_ops.h"

namespace ferry::moe {

torch::Tensor run_expert(const ExpertLayout& L, const float* base, const torch::Tensor& m, const ExpertWork& work,
                         const std::string& hidden_act) {
  float* p = const_cast<float*>(base);  // from_blob wants non-const; the views are only read
  auto w1 = torch::from_blob(p + L.w1_offset(), {L.intermediate, L.hidden});
  auto w3 = torch::from_blob(p + L.w3_offset(), {L.intermediate, L.hidden});
  auto w2 = torch::from_blob(p + L.w2_offset(), {L.hidden, L.intermediate});
  const auto n = static_cast<std::int64_t>(work.rows.size());
  auto idx = torch::from_blob(const_cast<std::int64_t*>(work.rows.data()), {n}, torch::kInt64);
  auto gate = torch::from_blob(const_cast<float*>(work.gates.data()), {n, 1});
  return gated_mlp(m.index_select(0, idx), w1, w3, w2, hidden_act) * gate;
}

double measure_expert_call_s(const ExpertLayout& layout, const std::string& hidden_act) {
  torch::NoGradGuard ng;
  auto x = torch::randn({1, layout.hidden});
  auto weights = torch::randn({layout.floats()});
  ExpertWork work{0, {0}, {1.f}};
  std::vector<double> t;
  for (int i = 0; i < 15; ++i) {
    const double t0 = now_s();
    run_expert(layout, weights.data_ptr<float>(), x, work, hidden_act);
    t.push_back(now_s() - t0);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace ferry::moe
