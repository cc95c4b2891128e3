// The analytical cost model of one training iteration per algorithm. Each algorithm's cost is
// an entry of a registry keyed by the strategy's registry name (train/strategy.h); entries
// live in one file per family (sync_costs.cc: S-SGD, ASGD, WFBP, compute-only;
// delayed_costs.cc: OD-SGD, SSD-SGD, CD-SGD; local_sgd_cost.cc). The formulas are in those
// files and in docs/advise.md. Code outside an entry's file asks the entry (and the strategy's
// StrategyInfo capabilities), never compares names.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "advise/codec_cost.h"
#include "advise/device_profile.h"
#include "advise/model_profile.h"
#include "advise/network_model.h"
#include "train/strategy.h"

namespace ferry::advise {

// The machine's constants the formulas cannot know, fitted from calibration runs
// (calibration.h). Defaults are what an ideal machine would give.
struct MachineConstants {
  double cores = 2;               // effective cores the ranks share (shared-core devices only)
  double compute_scale = 1;       // a rank's in-run compute / the profile run's compute
  double cpu_s_per_byte = 0;      // CPU seconds per byte a rank sends or receives (copies)
  double message_s = 0;           // software seconds per message (framing, MPI, serial server loop)
  double ps_overlap = 0;          // share of the smaller direction of a sync PS round hidden behind
                                  // the larger (full duplex: the next keys' pushes under the replies)
  double run_overhead_s = 0;      // per run: first iteration's allocations, the final pull
};

// One configuration to predict.
struct Scenario {
  const ModelProfile* model = nullptr;  // outlives the scenario (the caller's)
  DeviceProfile device;
  std::int64_t batch = 64;
  int workers = 4;
  int servers = 1;  // with the parameter server
  train::Topology topology = train::Topology::kParameterServer;
  LinkModel link;   // message_s is taken from the constants
  CodecCost codec;  // the codec of the pushes (uncompressed_cost for none)
  CodecCost full;   // fp32 (uncompressed_cost), for the full-precision steps
  std::int64_t steps = 0;  // iterations of the run; 0: steady state only
  // The --algo spec predict() was given: the keys of a strategy with options of its own
  // (diloco:inner_steps=50, ssdsgd:delay_steps=4).
  std::string algo;
};

// What one iteration costs a worker, in the steady state of an algorithm.
struct IterationCost {
  double iteration_s = 0;     // wall time per iteration
  double compute_s = 0;       // of which the worker computes (its own, possibly stretched)
  double bytes_sent = 0;      // per worker per iteration
};

// The derived quantities every formula uses.
class CostContext {
 public:
  CostContext(const Scenario& scenario, const MachineConstants& constants);
  const Scenario& sc() const { return sc_; }
  const MachineConstants& k() const { return k_; }
  int n() const { return sc_.workers; }
  int s() const { return std::max(1, sc_.servers); }
  const LinkModel& link() const { return link_; }
  // One worker's compute of an iteration, alone on its core or device.
  double compute1() const { return compute1_; }
  // The forward and backward parts of compute1 (the update is the rest).
  double forward1() const { return forward1_; }
  double backward1() const { return backward1_; }
  // How much slower CPU work runs when `busy` ranks want a core at once (1 on dedicated devices).
  double stretch(double busy) const;
  // Codec times on this device (the measured ones scaled like compute).
  double encode_s(const CodecCost& c) const { return c.encode_s * device_scale_; }
  double decode_s(const CodecCost& c) const { return c.decode_s * device_scale_; }
  double custom_s(const CodecCost& c) const { return c.custom_allreduce_s * device_scale_; }
  double momentum_s(const CodecCost& c) const { return c.momentum_s * device_scale_; }
  double allgather_encode_s(const CodecCost& c) const { return c.allgather_encode_s * device_scale_; }
  double allgather_decode_s(const CodecCost& c) const { return c.allgather_decode_s * device_scale_; }
  // CPU seconds to copy `bytes` through the transport (send or receive), one rank.
  double copy_s(double bytes) const { return k_.cpu_s_per_byte * bytes; }
  // Host<->device staging of `bytes` (accelerators only).
  double staging_s(double bytes) const;
  // Parameter-server keys: tensors split at server boundaries.
  double keys() const { return static_cast<double>(sc_.model->tensors.size() + s() - 1); }
  // Seconds of CPU work `cpu_s` in total across ranks take when spread over the shared cores
  // (0 on dedicated devices: no shared bound).
  double shared_cpu_bound(double cpu_s) const;
  double fp32_bytes() const { return sc_.model->gradient_bytes(); }

  // One synchronous parameter-server round after the workers' compute: every worker pushes
  // `push_bytes` (the servers decode-add each payload in `decode_s`), the servers' CPU work,
  // then replies of `pull_bytes` to every worker; `keys` messages of each kind per worker. The
  // servers' NICs are full duplex and a key's replies go out while later keys' pushes come in,
  // so of the two directions the smaller one is hidden by the share ps_overlap; the servers'
  // CPU work runs while the bytes move:
  //   max(max(push, pull) + (1 - eta) min(push, pull), server CPU) + staging
  double ps_round_s(double push_bytes, double decode_s, double pull_bytes, double keys) const;
  // The servers' CPU seconds per round (decode, copies, the serial message loop), per server.
  double ps_server_cpu_s(double push_bytes, double decode_s, double pull_bytes, double keys) const;

 private:
  Scenario sc_;
  MachineConstants k_;
  LinkModel link_;
  double device_scale_ = 1;
  double compute1_ = 0, forward1_ = 0, backward1_ = 0;
};

struct AlgorithmCost {
  std::string name;     // the strategy's registry name
  std::string summary;  // the formula in one line
  // Steady-state iteration.
  std::function<IterationCost(const CostContext&)> steady;
  // Iterations at the start that run another algorithm's iteration (warm-up, post-local
  // prefix), and the topology they run on; 0: none. Given the scenario with its --algo spec.
  std::function<std::int64_t(const Scenario&)> prefix_steps;
};

void register_algorithm_cost(AlgorithmCost cost);
// Registers every family's entries (idempotent).
void register_builtin_algorithm_costs();
// nullptr when the strategy has no cost model.
const AlgorithmCost* find_algorithm_cost(const std::string& strategy);

// Family registration, each in its own file.
void register_sync_costs();
void register_delayed_costs();
void register_local_sgd_cost();
void register_diloco_costs();

// What a codec costs where the run pays it (codec_exchange.cc). The ring-allreduce exchange of
// one gradient-sized vector with codec `c` (S-SGD's allreduce path, DiLoCo's outer gradient): its
// time and the bytes a worker sends.
double allreduce_exchange_s(const CostContext& x, const CodecCost& c);
double allreduce_bytes_sent(const CostContext& x, const CodecCost& c);
// A worker's codec pass over its gradient before a push or an exchange, one core: the velocity
// pass where the spec puts the momentum on the worker, encode and masking (0 for fp32).
double worker_codec_s(const CostContext& x, const CodecCost& c);
// S-SGD's agreement on a finite gradient before a coded allreduce exchange: a 1-byte allgather.
double finite_flag_s(const CostContext& x);

struct Prediction {
  std::string algo;
  std::int64_t steps = 0;          // the run predicted (Scenario::steps); 0: the steady state
  double iteration_s = 0;          // steady state
  double samples_per_s = 0;        // over `steps` (prefix and run overhead included) or the steady state
  double bytes_per_iteration = 0;  // per worker, steady state
  // Share of the time a worker waits on communication, as ferry train measures it (its comm
  // wait over its training time): over `steps` (the prefix's waits and the run overhead
  // included) or, for the steady state, 1 - compute / iteration.
  double comm_fraction = 0;
};

// Predicts `algo` (a registered strategy with a cost entry; InvalidArgument otherwise) on `sc`.
Prediction predict(const std::string& algo, const Scenario& sc, const MachineConstants& k);

}  // namespace ferry::advise
