#include "moe/engine/expert_group.h"

#include <cstring>

#include <torch/types.h>
#include <torch/utils.h>

#include "core/error.h"
#include "moe/model/decoder_ops.h"
#include "moe/quant/matmul.h"

namespace ferry::moe {

bool joins_expert_group(const ExpertLayout& layout, std::int64_t tokens) {
  return tokens <= kExpertGroupMemberRows && auto_kernels(layout, tokens) == ExpertKernels::kBlocks;
}

void run_expert_group(const ExpertLayout& L, const std::vector<ExpertGroupMember>& members, const torch::Tensor& m,
                      const MoeConfig& c, torch::Tensor& out) {
  const std::int64_t H = L.hidden, I = L.intermediate;
  // The members' rows one after the other: member k's are [first[k], first[k + 1]).
  std::vector<std::int64_t> first{0}, rows;
  std::vector<float> gates;
  for (const auto& mb : members) {
    FERRY_CHECK(joins_expert_group(L, static_cast<std::int64_t>(mb.work->rows.size())),
                "expert ", mb.work->expert, " cannot join a group (joins_expert_group)");
    rows.insert(rows.end(), mb.work->rows.begin(), mb.work->rows.end());
    gates.insert(gates.end(), mb.work->gates.begin(), mb.work->gates.end());
    first.push_back(static_cast<std::int64_t>(rows.size()));
  }
  const auto R = static_cast<std::int64_t>(rows.size());
  // The members' activation rows in the weights' format. Rows are converted one by one, so either
  // way gives the same bytes: where the step has fewer tokens than the group has rows (decode: a
  // token goes to top-k experts), every token is converted once and its row copied to each member;
  // otherwise (prefill) only the group's rows are gathered and converted.
  thread_local std::vector<std::byte> tokens_act, up_act, down_act;
  const std::size_t up_row = quant::activation_row_bytes(L.format, static_cast<std::size_t>(H));
  if (m.size(0) <= R) {
    quant::quantize_activations(L.format, m.data_ptr<float>(), static_cast<std::size_t>(m.size(0)),
                                static_cast<std::size_t>(H), tokens_act);
    up_act.resize(static_cast<std::size_t>(R) * up_row);
    for (std::size_t r = 0; r < rows.size(); ++r)
      std::memcpy(up_act.data() + r * up_row, tokens_act.data() + static_cast<std::size_t>(rows[r]) * up_row, up_row);
  } else {
    auto x = m.index_select(0, torch::from_blob(rows.data(), {R}, torch::kInt64)).contiguous();
    quant::quantize_activations(L.format, x.data_ptr<float>(), static_cast<std::size_t>(R), static_cast<std::size_t>(H),
                                up_act);
  }
  auto gate = torch::empty({R, I}), up = torch::empty({R, I});
  std::vector<BlockProduct> ps;
  for (std::size_t k = 0; k < members.size(); ++k) {
    const std::byte* x = up_act.data() + static_cast<std::size_t>(first[k]) * up_row;
    const std::int64_t n = first[k + 1] - first[k];
    ps.push_back({{L.format, members[k].base + L.w1_offset(), I}, x, n, gate.data_ptr<float>() + first[k] * I});
    ps.push_back({{L.format, members[k].base + L.w3_offset(), I}, x, n, up.data_ptr<float>() + first[k] * I});
  }
  run_block_products(H, ps);
  // The gated unit on each member's rows, as one tensor of run_expert's shape (its element-wise
  // kernels may round a row's tail differently from its body).
  auto h = torch::empty({R, I});
  for (std::size_t k = 0; k < members.size(); ++k)
    h.slice(0, first[k], first[k + 1])
        .copy_(glu(c, gate.slice(0, first[k], first[k + 1]), up.slice(0, first[k], first[k + 1]), members[k].bias));
  quant::quantize_activations(L.down_format, h.data_ptr<float>(), static_cast<std::size_t>(R),
                              static_cast<std::size_t>(I), down_act);
  const std::size_t down_row = quant::activation_row_bytes(L.down_format, static_cast<std::size_t>(I));
  auto y = torch::empty({R, H});
  ps.clear();
  for (std::size_t k = 0; k < members.size(); ++k)
    ps.push_back({{L.down_format, members[k].base + L.w2_offset(), H}, down_act.data() + static_cast<std::size_t>(first[k]) * down_row,
                  first[k + 1] - first[k], y.data_ptr<float>() + first[k] * H});
  run_block_products(I, ps);
  for (std::size_t k = 0; k < members.size(); ++k)
    if (members[k].bias.down.defined()) y.slice(0, first[k], first[k + 1]).add_(members[k].bias.down);
  y.mul_(torch::from_blob(gates.data(), {R, 1}));
  out.index_add_(0, torch::from_blob(rows.data(), {R}, torch::kInt64), y);
}

}  // namespace ferry::moe
