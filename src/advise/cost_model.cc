#include "advise/cost_model.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/registry.h"

namespace ferry::advise {
namespace {

Registry<AlgorithmCost>& cost_registry() {
  static Registry<AlgorithmCost> r("cost model of --algo");
  return r;
}

// Times of a profile measured on one device, on another: the ratio of their sustained rates.
double device_scale(const ModelProfile& m, const DeviceProfile& d) {
  if (m.device == d.name) return 1.0;
  double from = m.device_tflops;
  if (from <= 0) from = device_profile(m.device).sustained_tflops;
  FERRY_REQUIRE(from > 0, "model profile '", m.name, "' was measured on '", m.device,
                "', whose speed is unknown: give device_tflops in the profile");
  FERRY_REQUIRE(d.sustained_tflops > 0, "--device ", d.name, ": a profile measured on '", m.device,
                "' cannot be projected onto this machine's cores; profile the model here (--model NAME)");
  return from / d.sustained_tflops;
}

}  // namespace

CostContext::CostContext(const Scenario& sc, const MachineConstants& k) : sc_(sc), k_(k), link_(sc.link) {
  FERRY_CHECK(sc.model != nullptr);
  FERRY_REQUIRE_OP(sc.workers, >=, 1, "--workers");
  FERRY_REQUIRE_OP(sc.batch, >=, 1, "--batch");
  FERRY_REQUIRE(sc.topology != train::Topology::kParameterServer || sc.servers >= 1,
                "the parameter server needs --servers >= 1, got ", sc.servers);
  // The copy and per-message costs are calibrated on this machine's software path, where every
  // rank shares its cores with the others; a cluster's hosts are their own (the papers' setups):
  // there only the link, staging and the codecs cost.
  if (!sc.device.shared_cores) {
    k_.cpu_s_per_byte = 0;
    k_.message_s = 0;
  }
  link_.message_s = k_.message_s;
  device_scale_ = device_scale(*sc.model, sc.device);
  // The calibrated compute scale is this machine's (in-run bookkeeping the profile run lacks).
  const double scale = device_scale_ * (sc.device.shared_cores ? k.compute_scale : 1.0);
  const double b = static_cast<double>(sc.batch) / static_cast<double>(sc.model->batch);
  forward1_ = sc.model->forward_s * b * scale;
  backward1_ = sc.model->backward_s * b * scale;
  compute1_ = sc.model->compute_s(sc.batch) * scale;
}

double CostContext::stretch(double busy) const {
  if (!sc_.device.shared_cores || !(k_.cores > 0)) return 1.0;
  return std::max(1.0, busy / k_.cores);
}

double CostContext::staging_s(double bytes) const {
  return sc_.device.staging_bytes_per_s > 0 ? bytes / sc_.device.staging_bytes_per_s : 0.0;
}

double CostContext::shared_cpu_bound(double cpu_s) const {
  if (!sc_.device.shared_cores || !(k_.cores > 0)) return 0.0;
  return cpu_s / k_.cores;
}

double CostContext::ps_server_cpu_s(double push_bytes, double decode_s, double pull_bytes, double keys) const {
  // Per server: its share of every worker's payload decoded and copied in, the replies copied
  // out, and three messages per key and worker (push, pull request, reply) through its loop.
  return (n() * (decode_s + copy_s(push_bytes + pull_bytes)) + 3.0 * n() * keys * k_.message_s) / s();
}

double CostContext::ps_round_s(double push_bytes, double decode_s, double pull_bytes, double keys) const {
  const double push = ps_push_s(link_, n(), s(), push_bytes);
  const double pull = ps_pull_s(link_, n(), s(), pull_bytes);
  const double wire = std::max(push, pull) + (1.0 - k_.ps_overlap) * std::min(push, pull);
  return std::max(wire, ps_server_cpu_s(push_bytes, decode_s, pull_bytes, keys)) + staging_s(push_bytes + pull_bytes);
}

void register_algorithm_cost(AlgorithmCost cost) {
  FERRY_CHECK(cost.steady != nullptr, "cost model '", cost.name, "' has no formula");
  cost_registry().add_if_absent(std::move(cost));
}

void register_builtin_algorithm_costs() {
  register_sync_costs();
  register_delayed_costs();
  register_local_sgd_cost();
  register_diloco_costs();
}

const AlgorithmCost* find_algorithm_cost(const std::string& strategy) {
  register_builtin_algorithm_costs();
  return cost_registry().find(train::algo_name(strategy));
}

namespace {

// The strategy every speedup is measured against (StrategyInfo::speedup_baseline): it also
// runs the warm-up and post-local prefixes.
const train::StrategyInfo& baseline_strategy() {
  for (const auto& name : train::strategy_names())
    if (const auto& info = train::strategy_info(name); info.speedup_baseline) return info;
  FERRY_THROW(InternalError, "no strategy is the speedup baseline");
}

}  // namespace

Prediction predict(const std::string& algo, const Scenario& sc, const MachineConstants& k) {
  train::register_builtin_strategies();
  const train::StrategyInfo& info = train::strategy_info(algo);  // InvalidArgument: unknown --algo
  const AlgorithmCost* cost = find_algorithm_cost(algo);
  FERRY_REQUIRE(cost != nullptr, "--algo ", algo, " has no cost model in ferry advise");
  FERRY_REQUIRE(std::find(info.topologies.begin(), info.topologies.end(), sc.topology) != info.topologies.end(),
                "--algo ", algo, " does not run on the ", train::topology_name(sc.topology), " topology");
  FERRY_REQUIRE(info.takes_codec || !sc.codec.compressed, "--algo ", algo, " sends fp32 (no --codec), got ",
                sc.codec.spec);
  Scenario spec_sc = sc;
  spec_sc.algo = algo;
  const CostContext ctx(spec_sc, k);
  const IterationCost it = cost->steady(ctx);
  Prediction p;
  p.algo = algo;
  p.iteration_s = it.iteration_s;
  p.bytes_per_iteration = it.bytes_sent;
  p.comm_fraction = it.iteration_s > 0 ? std::clamp(1.0 - it.compute_s / it.iteration_s, 0.0, 1.0) : 0.0;
  const double per_iteration_samples = static_cast<double>(sc.batch) * sc.workers;
  if (sc.steps <= 0) {
    p.samples_per_s = per_iteration_samples / it.iteration_s;
    return p;
  }
  // A run: the prefix's iterations are the baseline's (S-SGD on the same topology, fp32); the
  // run overhead (first iterations' set-up, the final pull) is spent waiting when the algorithm
  // communicates at all.
  p.steps = sc.steps;
  const std::int64_t prefix = std::min(sc.steps, cost->prefix_steps ? cost->prefix_steps(spec_sc) : 0);
  const double steady = static_cast<double>(sc.steps - prefix);
  double total = steady * it.iteration_s + k.run_overhead_s;
  double waiting = steady * std::max(0.0, it.iteration_s - it.compute_s) + (it.bytes_sent > 0 ? k.run_overhead_s : 0.0);
  if (prefix > 0) {
    const auto& base = baseline_strategy();
    const AlgorithmCost* base_cost = find_algorithm_cost(base.name);
    FERRY_CHECK(base_cost != nullptr);
    Scenario plain = sc;
    plain.codec = sc.full;
    const IterationCost b = base_cost->steady(CostContext(plain, k));
    total += static_cast<double>(prefix) * b.iteration_s;
    waiting += static_cast<double>(prefix) * std::max(0.0, b.iteration_s - b.compute_s);
  }
  p.comm_fraction = total > 0 ? std::clamp(waiting / total, 0.0, 1.0) : 0.0;
  p.samples_per_s = per_iteration_samples * static_cast<double>(sc.steps) / total;
  return p;
}

}  // namespace ferry::advise
