#include "train/strategy.h"

#include <map>
#include <mutex>

#include "core/error.h"
#include "train/asgd_strategy.h"
#include "train/ssgd_strategy.h"

namespace ferry::train {
namespace {
std::mutex g_mu;
std::map<std::string, StrategyInfo>& registry() {
  static std::map<std::string, StrategyInfo> r;
  return r;
}
}  // namespace

void register_strategy(StrategyInfo info) {
  std::lock_guard lock(g_mu);
  registry()[info.name] = std::move(info);
}

void register_builtin_strategies() {
  register_strategy({"ssgd", "synchronous SGD: average every worker's gradient each step",
                     {Topology::kAllreduce, Topology::kParameterServer}, ps::ServerMode::kSync,
                     [](const StrategyContext& c) { return std::make_unique<SsgdStrategy>(c); }});
  register_strategy({"asgd", "asynchronous SGD: the server applies each push as it arrives",
                     {Topology::kParameterServer}, ps::ServerMode::kAsync,
                     [](const StrategyContext& c) { return std::make_unique<AsgdStrategy>(c); }});
}

const StrategyInfo& strategy_info(const std::string& name) {
  std::lock_guard lock(g_mu);
  auto it = registry().find(name);
  if (it == registry().end()) {
    std::string known;
    for (const auto& [n, _] : registry()) known += (known.empty() ? "" : ", ") + n;
    FERRY_THROW(InvalidArgument, "unknown --algo '", name, "' (known: ", known, ")");
  }
  return it->second;
}

std::vector<std::string> strategy_names() {
  std::lock_guard lock(g_mu);
  std::vector<std::string> names;
  for (const auto& [n, _] : registry()) names.push_back(n);
  return names;
}

const char* topology_name(Topology t) { return t == Topology::kAllreduce ? "allreduce" : "ps"; }

Topology parse_topology(const std::string& text) {
  if (text == "allreduce") return Topology::kAllreduce;
  if (text == "ps") return Topology::kParameterServer;
  FERRY_THROW(InvalidArgument, "unknown --topology '", text, "' (known: allreduce, ps)");
}

}  // namespace ferry::train
