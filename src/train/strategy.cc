#include "train/strategy.h"

#include <map>
#include <mutex>

#include "core/error.h"
#include "train/asgd_strategy.h"
#include "train/cd_sgd_strategy.h"
#include "train/compute_only_strategy.h"
#include "train/local_sgd_strategy.h"
#include "train/od_sgd_strategy.h"
#include "train/ssd_sgd_strategy.h"
#include "train/wfbp_strategy.h"
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
  register_strategy({"odsgd", "one-step delay: local step from the latest global weights, push/pull in background",
                     {Topology::kParameterServer}, ps::ServerMode::kSync,
                     [](const StrategyContext& c) { return std::make_unique<OdSgdStrategy>(c); }});
  register_strategy({"ssdsgd", "several steps delay: local steps, pull every --delay-steps, GLU compensation",
                     {Topology::kParameterServer}, ps::ServerMode::kSync,
                     [](const StrategyContext& c) { return std::make_unique<SsdSgdStrategy>(c); }});
  register_strategy({"cdsgd", "one-step delay with 2-bit pushes and full-precision correction every k steps",
                     {Topology::kParameterServer}, ps::ServerMode::kSync,
                     [](const StrategyContext& c) { return std::make_unique<CdSgdStrategy>(c); }});
  register_strategy({"localsgd", "local SGD: own optimizer steps, model averaging every --sync-every steps",
                     {Topology::kAllreduce}, ps::ServerMode::kSync,
                     [](const StrategyContext& c) { return std::make_unique<LocalSgdStrategy>(c); }});
  register_strategy({"wfbp", "wait-free backprop: per-bucket communication started by autograd hooks",
                     {Topology::kAllreduce, Topology::kParameterServer}, ps::ServerMode::kSync,
                     [](const StrategyContext& c) { return std::make_unique<WfbpStrategy>(c); }});
  register_strategy({"compute-only", "reference: no communication at all (the iteration-time floor)",
                     {Topology::kAllreduce}, ps::ServerMode::kSync,
                     [](const StrategyContext& c) { return std::make_unique<ComputeOnlyStrategy>(c); }});
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

void Strategy::save_state(StateWriter&, FlatParams&, std::int64_t) {
  FERRY_THROW(InvalidArgument, "--algo ", name(), " cannot be checkpointed");
}

void Strategy::load_state(const StateReader&, FlatParams&) {
  FERRY_THROW(InvalidArgument, "--algo ", name(), " cannot resume from a checkpoint");
}

const char* topology_name(Topology t) { return t == Topology::kAllreduce ? "allreduce" : "ps"; }

Topology resolve_topology(const StrategyInfo& info, const std::string& requested) {
  return requested.empty() ? info.topologies.front() : parse_topology(requested);
}

Topology parse_topology(const std::string& text) {
  if (text == "allreduce") return Topology::kAllreduce;
  if (text == "ps") return Topology::kParameterServer;
  FERRY_THROW(InvalidArgument, "unknown --topology '", text, "' (known: allreduce, ps)");
}

}  // namespace ferry::train
