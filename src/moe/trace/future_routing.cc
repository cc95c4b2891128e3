#include "moe/trace/future_routing.h"

#include <algorithm>

namespace ferry::moe {

void FutureRouting::index() {
  uses_.assign(static_cast<std::size_t>(num_layers) * num_experts, {});
  for (std::size_t s = 0; s < steps.size(); ++s)
    for (int l = 0; l < num_layers && l < static_cast<int>(steps[s].size()); ++l)
      for (int e : steps[s][l].experts)
        uses_[static_cast<std::size_t>(l) * num_experts + e].push_back(static_cast<std::int64_t>(s) * num_layers + l);
}

std::int64_t FutureRouting::next_use(ExpertId id, std::int64_t after) const {
  const std::size_t k = static_cast<std::size_t>(id.layer) * num_experts + id.expert;
  if (k >= uses_.size()) return kNever;
  const auto& u = uses_[k];
  auto it = std::upper_bound(u.begin(), u.end(), after);
  return it == u.end() ? kNever : *it;
}

int FutureRouting::tokens_at(std::int64_t position, int expert) const {
  if (position < 0 || position >= positions()) return 0;
  const LayerRoute& r = at(position);
  auto it = std::lower_bound(r.experts.begin(), r.experts.end(), expert);
  return it != r.experts.end() && *it == expert ? r.tokens[it - r.experts.begin()] : 0;
}

}  // namespace ferry::moe
