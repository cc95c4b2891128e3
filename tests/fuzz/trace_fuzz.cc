// Fuzzes the routing-trace readers (moe/trace/routing_trace); built once per format with
// FERRY_FUZZ_TRACE = 0 (Mixtral JSONL), 1 (granite JSON) or 2 (layer-0 JSONL). A trace is either
// rejected with a FormatError or holds tokens that the consumers may index without checks:
// every token has num_layers layers and every expert id is in [0, num_experts). The routing
// statistics, which index per-expert tables by those ids, are computed on every accepted trace.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "fuzz_util.h"
#include "moe/trace/routing_stats.h"
#include "moe/trace/routing_trace.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ferry;
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  moe::RoutingTrace t;
  const bool ok = fuzz::parses<FormatError>([&] {
#if FERRY_FUZZ_TRACE == 0
    t = moe::read_mixtral_trace(in, "fuzz.jsonl");
#elif FERRY_FUZZ_TRACE == 1
    t = moe::read_granite_trace(in, "fuzz.json");
#else
    t = moe::read_layer0_trace(in, "fuzz.jsonl");
#endif
  });
  if (!ok) return 0;
  FERRY_FUZZ_ASSERT(!t.tokens.empty() && t.num_layers >= 1 && t.num_experts >= 1 && t.top_k >= 1);
  for (const auto& tok : t.tokens) {
    FERRY_FUZZ_ASSERT(static_cast<int>(tok.experts.size()) == t.num_layers);
    for (const auto& layer : tok.experts) {
      FERRY_FUZZ_ASSERT(static_cast<int>(layer.size()) <= t.top_k);
      for (int e : layer) FERRY_FUZZ_ASSERT(e >= 0 && e < t.num_experts);
    }
  }
  (void)moe::routing_stats(t);
  return 0;
}
