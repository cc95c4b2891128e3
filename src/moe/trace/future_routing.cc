#include "moe/trace/future_routing.h"

#include <algorithm>

#include "core/error.h"

namespace ferry::moe {

FutureRouting form_batches(const RoutingTrace& trace, int batch, bool include_prefill) {
  FERRY_REQUIRE_GE(batch, 1, "batch");
  std::vector<const TraceToken*> stream;
  for (const auto& t : trace.tokens)
    if (include_prefill || !t.prefill) stream.push_back(&t);
  FERRY_REQUIRE(!stream.empty(), "trace '", trace.path, "' has no decode tokens");
  const std::size_t N = stream.size();
  FutureRouting f;
  f.num_layers = trace.num_layers;
  f.num_experts = trace.num_experts;
  f.steps.resize(N);
  std::vector<int> count(trace.num_experts);
  for (std::size_t s = 0; s < N; ++s) {
    f.steps[s].resize(trace.num_layers);
    for (int l = 0; l < trace.num_layers; ++l) {
      std::fill(count.begin(), count.end(), 0);
      for (int j = 0; j < batch; ++j) {
        const TraceToken& tok = *stream[(static_cast<std::size_t>(j) * N / batch + s) % N];
        if (l >= static_cast<int>(tok.experts.size())) continue;
        std::vector<int> seen;  // a token counts once per expert even if the trace repeats it
        for (int e : tok.experts[l])
          if (e >= 0 && e < trace.num_experts && std::find(seen.begin(), seen.end(), e) == seen.end()) {
            seen.push_back(e);
            ++count[e];
          }
      }
      LayerRoute& r = f.steps[s][l];
      for (int e = 0; e < trace.num_experts; ++e)
        if (count[e]) r.experts.push_back(e), r.tokens.push_back(count[e]);
    }
  }
  f.index();
  return f;
}

FutureRouting replay_future(const RoutingTrace& trace, int batch, int prompt_tokens, int steps) {
  FERRY_REQUIRE(prompt_tokens >= 1 && steps >= 1, "replay_future: a prompt of ", prompt_tokens, " tokens and ", steps,
                " steps: expected at least 1 of each");
  const FutureRouting decode = form_batches(trace, batch);
  const std::size_t N = decode.steps.size();
  FutureRouting f;
  f.num_layers = decode.num_layers;
  f.num_experts = decode.num_experts;
  f.steps.resize(static_cast<std::size_t>(steps));
  // Step 0, the prompt: sequence j's positions 0..P-1 are form_batches' steps 0..P-1 (mod N).
  std::vector<int> count(static_cast<std::size_t>(f.num_experts));
  f.steps[0].resize(static_cast<std::size_t>(f.num_layers));
  for (int l = 0; l < f.num_layers; ++l) {
    std::fill(count.begin(), count.end(), 0);
    for (int s = 0; s < prompt_tokens; ++s) {
      const LayerRoute& r = decode.steps[static_cast<std::size_t>(s) % N][static_cast<std::size_t>(l)];
      for (std::size_t i = 0; i < r.experts.size(); ++i) count[static_cast<std::size_t>(r.experts[i])] += r.tokens[i];
    }
    LayerRoute& r = f.steps[0][static_cast<std::size_t>(l)];
    for (int e = 0; e < f.num_experts; ++e)
      if (count[static_cast<std::size_t>(e)]) r.experts.push_back(e), r.tokens.push_back(count[static_cast<std::size_t>(e)]);
  }
  // Decode step k >= 1 runs position P + k - 1 of every sequence.
  for (int k = 1; k < steps; ++k)
    f.steps[static_cast<std::size_t>(k)] = decode.steps[static_cast<std::size_t>(prompt_tokens + k - 1) % N];
  f.index();
  return f;
}

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

}  // namespace ferry::moe
