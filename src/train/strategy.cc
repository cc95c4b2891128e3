#include "train/strategy.h"

#include <algorithm>

#include "compress/codec_registry.h"
#include "core/error.h"
#include "core/registry.h"
#include "train/asgd_strategy.h"
#include "train/cd_sgd_strategy.h"
#include "train/compute_only_strategy.h"
#include "train/delayed_ps_options.h"
#include "train/diloco_strategy.h"
#include "train/local_sgd_options.h"
#include "train/local_sgd_strategy.h"
#include "train/lr_schedule.h"
#include "train/optimizer_choice.h"
#include "train/od_sgd_strategy.h"
#include "train/ssd_sgd_strategy.h"
#include "train/wfbp_options.h"
#include "train/wfbp_strategy.h"
#include "train/ssgd_strategy.h"

namespace ferry::train {
namespace {
Registry<StrategyInfo>& registry() {
  static Registry<StrategyInfo> r("--algo");
  return r;
}

template <class T>
std::function<std::unique_ptr<Strategy>(const StrategyContext&)> factory() {
  return [](const StrategyContext& c) -> std::unique_ptr<Strategy> { return std::make_unique<T>(c); };
}
}  // namespace

void register_strategy(StrategyInfo info) {
  FERRY_CHECK(info.make != nullptr, "strategy '", info.name, "' has no factory");
  FERRY_CHECK(!info.topologies.empty(), "strategy '", info.name, "' has no topology");
  registry().add(std::move(info));
}

void register_builtin_strategies() {
  using T = Topology;
  const std::vector<StrategyInfo> builtin = {
      {.name = "ssgd", .summary = "synchronous SGD: average every worker's gradient each step",
       .topologies = {T::kAllreduce, T::kParameterServer}, .speedup_baseline = true,
       .worker_optimizer = {T::kAllreduce}, .make = factory<SsgdStrategy>()},
      {.name = "asgd", .summary = "asynchronous SGD: the server applies each push as it arrives",
       .topologies = {T::kParameterServer}, .server_mode = ps::ServerMode::kAsync, .deterministic = false,
       .make = factory<AsgdStrategy>()},
      {.name = "odsgd", .summary = "one-step delay: local step from the latest global weights, push/pull in background",
       .topologies = {T::kParameterServer}, .read_options = [](SpecReader& r) { DelayedPsOptions::read(r); },
       .make = factory<OdSgdStrategy>()},
      {.name = "ssdsgd", .summary = "several steps delay: local steps, pull every delay_steps, GLU compensation",
       .topologies = {T::kParameterServer}, .read_options = [](SpecReader& r) { SsdSgdOptions::read(r); },
       .make = factory<SsdSgdStrategy>()},
      {.name = "cdsgd", .summary = "one-step delay with 2-bit pushes and full-precision correction every k steps",
       .topologies = {T::kParameterServer}, .needs_codec = true,
       .default_codec = [](const std::string& spec) { return CdSgdOptions::of_spec(spec).default_codec(); },
       .read_options = [](SpecReader& r) { CdSgdOptions::read(r); }, .make = factory<CdSgdStrategy>()},
      {.name = "localsgd", .summary = "local SGD: own optimizer steps, model averaging every sync_every steps",
       .topologies = {T::kAllreduce}, .takes_codec = false, .worker_optimizer = {T::kAllreduce},
       .read_options = [](SpecReader& r) { LocalSgdOptions::read(r); }, .make = factory<LocalSgdStrategy>()},
      {.name = "wfbp", .summary = "wait-free backprop: per-bucket communication started by autograd hooks",
       .topologies = {T::kAllreduce, T::kParameterServer}, .takes_codec = false,
       .read_options = [](SpecReader& r) { WfbpOptions::read(r); }, .make = factory<WfbpStrategy>()},
      {.name = "compute-only", .summary = "reference: no communication at all (the iteration-time floor)",
       .topologies = {T::kAllreduce}, .takes_codec = false, .compute_floor = true,
       .worker_optimizer = {T::kAllreduce}, .make = factory<ComputeOnlyStrategy>()},
      diloco_entry(/*streaming=*/false),
      diloco_entry(/*streaming=*/true),
  };
  // Every rank thread of a local run may call this at once: add_if_absent is atomic per entry.
  for (const auto& info : builtin) registry().add_if_absent(info);
}

std::string algo_name(const std::string& algo_spec) { return Spec::name_of(algo_spec); }

const StrategyInfo& strategy_info(const std::string& algo_spec) { return registry().at(algo_name(algo_spec)); }

const StrategyInfo* find_strategy(const std::string& algo_spec) { return registry().find(algo_name(algo_spec)); }

std::string canonical_algo(const std::string& algo_spec) {
  const StrategyInfo& info = strategy_info(algo_spec);  // an unknown name first, listing the known ones
  SpecReader r(Spec::parse(algo_spec, "--algo"), "--algo");
  if (info.read_options) info.read_options(r);
  r.finish();
  return r.canonical();
}

std::string fold_shorthands(const std::string& algo_spec, const std::vector<SpecShorthand>& shorthands) {
  const std::string name = algo_name(canonical_algo(algo_spec));  // the spec itself checked first
  const Spec keys = Spec::parse(canonical_algo(name), "--algo");  // every key of the strategy, defaults
  Spec spec = Spec::parse(algo_spec, "--algo");
  std::vector<const SpecShorthand*> folded;
  for (const auto& s : shorthands) {
    if (s.value.empty()) continue;
    const auto known = [&s](const auto& kv) { return kv.first == s.key; };
    if (std::none_of(keys.params.begin(), keys.params.end(), known)) continue;  // another strategy's
    const auto set = std::find_if(spec.params.begin(), spec.params.end(), known);
    if (set != spec.params.end()) {
      const auto canonical = [&](const std::string& value) { return canonical_algo(name + ":" + s.key + "=" + value); };
      bool same = set->second == s.value;
      try {
        same = same || canonical(set->second) == canonical(s.value);  // "4" and "04"
      } catch (const InvalidArgument&) {  // the flag's value is bad: it contradicts the spec's good one
      }
      FERRY_REQUIRE(same, s.flag, " ", s.value, " contradicts --algo ", algo_spec, " (", s.key, "=", set->second, ")");
      continue;
    }
    spec.params.emplace_back(s.key, s.value);
    folded.push_back(&s);
  }
  try {
    return canonical_algo(spec.str());
  } catch (const InvalidArgument& e) {
    // A value that came from a flag: the message names the flag, as the user wrote it.
    std::string message = e.what();
    for (const SpecShorthand* s : folded) {
      const std::string as_key = "--algo " + name + ": " + s->key;
      if (message.rfind(as_key, 0) == 0) throw InvalidArgument(s->flag + message.substr(as_key.size()));
      if (message.find("option " + s->key + "=") != std::string::npos)  // a value of the wrong type
        throw InvalidArgument(s->flag + " " + s->value + ": " + message);
    }
    throw;
  }
}

std::vector<std::string> strategy_names() { return registry().names(); }

const StrategyInfo& compute_floor_strategy() {
  for (const auto& n : registry().names())
    if (const StrategyInfo& info = registry().at(n); info.compute_floor) return info;
  FERRY_THROW(InvalidArgument, "no registered strategy is a compute floor (register_builtin_strategies())");
}

std::string default_codec(const std::string& algo_spec) {
  const StrategyInfo& info = strategy_info(algo_spec);
  return info.default_codec ? info.default_codec(algo_spec) : "none";
}

void validate_algorithm_optimizer(const StrategyInfo& info, Topology topology, const std::string& optimizer,
                                  const std::string& lr_schedule) {
  const auto& takes = info.worker_optimizer;
  if (std::find(takes.begin(), takes.end(), topology) != takes.end()) return;
  const bool sgd = OptimizerChoice::of_spec(optimizer).kind == OptimizerKind::kSgd;
  const bool varies = LrSchedule::of_spec(lr_schedule).varies();
  if (sgd && !varies) return;
  std::string takers;
  for (const auto& n : registry().names())
    for (Topology t : registry().at(n).worker_optimizer)
      takers += (takers.empty() ? "" : ", ") + n + " (" + topology_name(t) + ")";
  const std::string flag = sgd ? "--lr-schedule " + lr_schedule : "--optimizer " + optimizer;
  FERRY_THROW(InvalidArgument, flag, ": --algo ", info.name, " on --topology ", topology_name(topology),
              " steps SGD at a constant --lr (the parameter servers' update, MXNet's, or one its definition fixes); "
              "--optimizer adamw and --lr-schedule are taken by ", takers);
}

void validate_algorithm_codec(const StrategyInfo& info, const std::string& codec) {
  if (!info.takes_codec)
    FERRY_REQUIRE(compress::codec_entry(codec).identity, "--algo ", info.name,
                  " does not compress (it sends fp32); drop --codec ", codec);
}

std::string strategy_spec(const StrategyOptions& options, const std::string& name) {
  if (options.algo.empty()) return name;
  FERRY_REQUIRE(algo_name(options.algo) == name, "--algo ", options.algo, " given to the ", name, " strategy");
  return options.algo;
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
