// A Strategy is one distributed-training algorithm seen from a worker: after each backward pass
// it moves gradients and weights so that the worker's model holds the weights of the next step.
// Strategies are chosen by name from a registry (register_builtin_strategies()).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "core/spec.h"
#include "ps/kv_server.h"
#include "ps/sgd_optimizer.h"
#include "train/flat_params.h"

namespace ferry::train {

class StateReader;
class StateWriter;

enum class Topology { kAllreduce, kParameterServer };

// Where everybody is: workers are ranks 0..num_workers-1, servers the ranks after them.
struct WorldLayout {
  int num_workers = 1;
  int num_servers = 0;  // 0 with allreduce
  bool is_server(int rank) const { return rank >= num_workers; }
  int first_server_rank() const { return num_workers; }
};

struct StrategyOptions {
  Topology topology = Topology::kAllreduce;
  WorldLayout world;
  ps::SgdOptions sgd;  // the global optimizer (server side with PS, worker side with allreduce)
  std::string codec = "none";  // gradient codec spec (compress/codec_registry.h); "none" = raw fp32
  std::string pull_codec = "";  // ps: codec of pull replies (pull_codec_spec); "" = fp32 pulls as in MXNet
  std::int64_t batch = 0;       // per-worker batch (codecs with thresholds in MXNet's units); 0 = unknown
  // The --algo spec, canonical (canonical_algo): a strategy with options of its own reads them
  // from it (StrategyInfo::read_options, strategy_spec()), e.g. "diloco:inner_steps=50,...".
  std::string algo = "";
  // The caller steps the weights itself before step() (the Python package with a torch.optim
  // optimizer of the user's); only a strategy whose entry has external_optimizer accepts it.
  bool external_optimizer = false;
  // The optimizer a worker steps itself and its learning-rate schedule, canonical specs
  // (optimizer_choice.h, lr_schedule.h); only a strategy whose entry lists the topology in
  // worker_optimizer reads them (the others step SGD at the constant sgd.lr).
  std::string optimizer = "sgd";
  std::string lr_schedule = "constant";
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string name() const = 0;
  // Makes every worker start from the same weights (worker 0's).
  virtual void setup(FlatParams& params) = 0;
  // Called after the backward pass of iteration `iteration` (0-based), with params' gradients
  // complete: communicates and leaves the weights for the next iteration in params, or (a
  // strategy with a layer_gate()) has each layer's weights in place before the next forward
  // enters that layer.
  virtual void step(FlatParams& params, std::int64_t iteration) = 0;
  // The gate the training loop installs on the model (Model::set_layer_gate); empty (the
  // default) when step() leaves every weight in place.
  virtual std::function<void(std::size_t first, std::size_t count)> layer_gate() { return {}; }
  // Finishes the updates a layer gate would have waited for, so that params hold the weights
  // for the next iteration; called before evaluating the model. Default: nothing is pending.
  virtual void complete(FlatParams& params) { (void)params; }
  // Called instead of step() when this worker's gradient of `iteration` is not finite (NaN or
  // Inf). Takes part in the iteration's communication, so nobody waits for this worker, and
  // makes sure no global update is built from the iteration: synchronous algorithms skip the
  // step on every worker (weights and optimizer state unchanged), asynchronous and local ones
  // drop this worker's contribution (docs/reliability.md, "Non-finite gradients").
  virtual void skip_step(FlatParams& params, std::int64_t iteration) = 0;
  // Leaves the final global weights in params and ends communication with servers.
  virtual void finish(FlatParams& params) = 0;
  // Checkpoints (checkpoint.h). Called on every worker after step() with the same `iterations`
  // done: waits for this worker's communication in flight, brings the servers to the same point
  // (they write their state before it returns) and writes this worker's state. The default
  // throws InvalidArgument (the algorithm cannot be checkpointed).
  virtual void save_state(StateWriter& out, FlatParams& params, std::int64_t iterations);
  // On resume, right after setup(): restores what save_state wrote.
  virtual void load_state(const StateReader& in, FlatParams& params);
  // Seconds this worker has been blocked waiting on communication.
  double comm_wait_s() const { return comm_wait_s_; }

 protected:
  double comm_wait_s_ = 0;
};

// What a strategy needs from the registry's caller. `comm` outlives the strategy.
struct StrategyContext {
  comm::Communicator* comm = nullptr;
  StrategyOptions options;
};

// A strategy's registry entry (core/registry.h). Its capabilities are data, so that validation,
// the CLI and `ferry compare` ask the entry instead of comparing names.
struct StrategyInfo {
  std::string name;
  std::string summary;
  std::vector<Topology> topologies;  // supported, the first is the default
  ps::ServerMode server_mode = ps::ServerMode::kSync;  // with a parameter server
  // Compresses its gradient pushes with StrategyOptions::codec; false: it exchanges weights or
  // fused buckets in fp32 and only the codec "none" is accepted.
  bool takes_codec = true;
  // Always compresses: when no codec is given it runs default_codec, and `ferry compare` runs
  // it only with compressing codecs.
  bool needs_codec = false;
  // The codec used when the user gave none, given the strategy's --algo spec (cdsgd's threshold
  // key); empty: "none".
  std::function<std::string(const std::string& algo_spec)> default_codec = {};
  // --deterministic can make it bit-reproducible (false for asynchronous algorithms).
  bool deterministic = true;
  // `ferry compare`: with the codec "none", the row every speedup is measured against.
  bool speedup_baseline = false;
  // `ferry compare`: no communication at all, the iteration-time floor every comparison runs.
  bool compute_floor = false;
  // The topologies on which every worker steps the optimizer itself (S-SGD on allreduce, local
  // SGD, DiLoCo's inner optimizer): there --optimizer adamw and an --lr-schedule apply. Elsewhere
  // the servers step SGD (MXNet's update) or the algorithm's definition fixes its update (SSD-SGD's
  // local step), and only --optimizer sgd at a constant --lr is accepted. Empty: nowhere.
  std::vector<Topology> worker_optimizer = {};
  // The --optimizer of a run that gives none (optimizer_choice.h).
  std::string default_optimizer = "sgd";
  // Runs with an optimizer the caller applies (StrategyOptions::external_optimizer): its own
  // update is local to each worker (DiLoCo's inner optimizer).
  bool external_optimizer = false;
  // Reads the strategy's own options from its --algo spec (core/spec.h: "diloco:inner_steps=50"),
  // each with its default, so that canonical_algo() refuses unknown keys and prints every option;
  // the strategy's constructor reads them the same way from StrategyOptions::algo
  // (strategy_spec()). Empty: the strategy takes no keys.
  std::function<void(SpecReader&)> read_options = {};
  std::function<std::unique_ptr<Strategy>(const StrategyContext&)> make;
};

// Adds a strategy to the process's registry; InvalidArgument if the name is taken.
void register_strategy(StrategyInfo info);
// Registers the built-in strategies, those of strategy.cc's table (idempotent); `ferry train --help`
// lists their names.
void register_builtin_strategies();
// The entry of the strategy an --algo spec names ("ssgd", "diloco:inner_steps=50"): throws
// InvalidArgument naming the known strategies for an unknown name.
const StrategyInfo& strategy_info(const std::string& algo_spec);
// nullptr for an unknown name.
const StrategyInfo* find_strategy(const std::string& algo_spec);
// The spec with every option of the strategy resolved ("diloco" -> "diloco:inner_steps=50,...";
// "ssgd" -> "ssgd"); an unknown name, an unknown key or a bad value is an InvalidArgument naming
// --algo and the key.
std::string canonical_algo(const std::string& algo_spec);
// A command-line flag that stands for one key of a strategy's spec: --sync-every 8 is
// localsgd:sync_every=8 (ferry train's and ferry advise's documented shorthands).
struct SpecShorthand {
  std::string flag;   // "--sync-every"
  std::string key;    // "sync_every"
  std::string value;  // as given; empty: not given
};
// canonical_algo() of `algo_spec` with the given shorthands that are keys of its strategy folded in
// ("localsgd" and --sync-every 8 -> "localsgd:post_local=0,sync_every=8"): the one place a flag
// becomes a spec key. A shorthand of a key the strategy does not have is left out (ferry compare
// passes one set of flags to every algorithm); one that the spec already sets to another value is
// an InvalidArgument naming both; a bad value that came from a flag is reported under the flag
// ("--sync-every must be at least 1, got 0").
std::string fold_shorthands(const std::string& algo_spec, const std::vector<SpecShorthand>& shorthands);
// The name part of an --algo spec ("diloco:inner_steps=5" -> "diloco").
std::string algo_name(const std::string& algo_spec);
// Sorted; for --help and error messages.
std::vector<std::string> strategy_names();
// The entry with compute_floor set (`ferry compare`'s reference row).
const StrategyInfo& compute_floor_strategy();
// The codec the strategy of `algo_spec` runs when the user gave none: its entry's default_codec
// of the spec, else "none".
std::string default_codec(const std::string& algo_spec);
// Throws InvalidArgument naming --optimizer or --lr-schedule when `optimizer` is not sgd, or the
// schedule varies, and the strategy does not step its workers' optimizer on `topology`.
void validate_algorithm_optimizer(const StrategyInfo& info, Topology topology, const std::string& optimizer,
                                  const std::string& lr_schedule);
// Throws InvalidArgument when the strategy cannot use a codec other than the identity (its
// takes_codec is false: it exchanges weights or fused buckets in fp32).
void validate_algorithm_codec(const StrategyInfo& info, const std::string& codec_spec);
// The --algo spec the strategy `name` reads its options from: options.algo, or the bare name when
// it is empty (a caller that builds StrategyOptions by hand takes the defaults); InvalidArgument
// when options.algo names another strategy.
std::string strategy_spec(const StrategyOptions& options, const std::string& name);

const char* topology_name(Topology t);
// "allreduce" or "ps"; anything else is an InvalidArgument.
Topology parse_topology(const std::string& text);
// The requested topology, or the strategy's default when `requested` is empty.
Topology resolve_topology(const StrategyInfo& info, const std::string& requested);

}  // namespace ferry::train
