#include "train/train_options.h"

#include <string>

#include "compress/codec_registry.h"
#include "core/error.h"
#include "core/machine_limits.h"
#include "train/gradient_codecs.h"
#include "train/lr_schedule.h"
#include "train/models/model.h"
#include "train/optimizer_choice.h"
#include "train/strategy.h"
#include "train/worker_momentum.h"

namespace ferry::train {

TrainOptions with_optimizer_defaults(const TrainOptions& given) {
  register_builtin_strategies();
  TrainOptions o = given;
  o.optimizer = canonical_optimizer(o.optimizer.empty() ? strategy_info(o.algo).default_optimizer : o.optimizer);
  const OptimizerChoice choice = OptimizerChoice::of_spec(o.optimizer);
  if (o.lr == 0.0f) o.lr = choice.default_lr();
  if (o.weight_decay == -1.0f) o.weight_decay = choice.default_weight_decay();
  o.lr_schedule = canonical_lr_schedule(o.lr_schedule, o.max_steps);
  return o;
}

void validate(const TrainOptions& given) {
  register_builtin_strategies();
  const StrategyInfo& info = strategy_info(given.algo);
  canonical_algo(given.algo);  // the strategy's own keys
  const TrainOptions o = with_optimizer_defaults(given);
  Topology topology = resolve_topology(info, o.topology);
  bool supported = false;
  for (auto t : info.topologies) supported |= t == topology;
  FERRY_REQUIRE(supported, "--algo ", info.name, " does not run on --topology ", topology_name(topology));
  FERRY_REQUIRE_GE(o.num_workers, 1, "--np");
  if (topology == Topology::kAllreduce)
    FERRY_REQUIRE(o.num_servers == 0, "--servers ", o.num_servers,
                  " makes no sense with --topology allreduce (it has no parameter servers)");
  else
    FERRY_REQUIRE(o.num_servers >= 1, "--topology ps needs --servers >= 1, got ", o.num_servers);
  bool known_model = false;
  for (const auto& m : model_names()) known_model |= m == o.model;
  if (!known_model) {
    std::string names;
    for (const auto& m : model_names()) names += (names.empty() ? "" : ", ") + m;
    FERRY_THROW(InvalidArgument, "unknown --model '", o.model, "' (known: ", names, ")");
  }
  FERRY_REQUIRE_GE(o.epochs, 1, "--epochs");
  FERRY_REQUIRE_GE(o.batch, 1, "--batch");
  FERRY_REQUIRE_FINITE(o.lr, >, 0, "--lr");
  FERRY_REQUIRE_IN(o.momentum, 0, 1, "[)", "--momentum");
  FERRY_REQUIRE_FINITE(o.weight_decay, >=, 0, "--wd");
  FERRY_REQUIRE_OP(o.threads_per_rank, >=, 0, "--threads");
  // Far more ranks or threads than cores looks like a hang and loads the machine: ask for it.
  const int ranks = o.num_workers + (topology == Topology::kAllreduce ? 0 : o.num_servers);
  require_ranks_fit(ranks,
                    " ranks (--np " + std::to_string(o.num_workers) + " + --servers " + std::to_string(o.num_servers) + ")",
                    o.oversubscribe);
  FERRY_REQUIRE(o.oversubscribe || o.threads_per_rank <= kMaxThreadsPerCore * machine_cores(), "--threads ",
                o.threads_per_rank, " on ", machine_cores(), " cores is more than ", kMaxThreadsPerCore,
                " per core: give --oversubscribe to run it anyway");
  FERRY_REQUIRE_OP(o.train_limit, >=, 0, "--train-limit");
  FERRY_REQUIRE_OP(o.test_limit, >=, 0, "--test-limit");
  FERRY_REQUIRE_OP(o.max_steps, >=, 0, "--max-steps");
  FERRY_REQUIRE_OP(o.eval_every, >=, 0, "--eval-every");
  FERRY_REQUIRE_OP(o.checkpoint_every, >=, 0, "--checkpoint-every");
  FERRY_REQUIRE_GE(o.keep_checkpoints, 1, "--keep-checkpoints");
  FERRY_REQUIRE_OP(o.stall_timeout_s, >=, 0, "--stall-timeout");
  FERRY_REQUIRE_GE(o.max_bad_steps, 1, "--max-bad-steps");
  if (o.checkpoint_every > 0)
    FERRY_REQUIRE(!o.checkpoint_dir.empty() || !o.out_dir.empty(),
                  "--checkpoint-every needs --checkpoint-dir or --out (checkpoints go to <out>/checkpoints)");
  if (o.deterministic)
    FERRY_REQUIRE(info.deterministic, "--deterministic: --algo ", info.name,
                  " is asynchronous and cannot be bit-reproducible");
  canonical_codec(o);
  validate_algorithm_codec(info, canonical_codec(o));
  validate_algorithm_optimizer(info, topology, o.optimizer, o.lr_schedule);
  // A codec that keeps its own momentum (dgc) must not meet a different optimizer momentum. AdamW
  // keeps its moments and decoupled decay on the aggregate (no momentum or decay to move).
  const bool adamw = OptimizerChoice::of_spec(o.optimizer).kind == OptimizerKind::kAdamW;
  OptimizerSplit split;
  try {
    split = split_optimizer(canonical_codec(o), adamw ? ps::SgdOptions{o.lr, 0.0f, 0.0f, 1.0f}
                                                      : ps::SgdOptions{o.lr, o.momentum, o.weight_decay, 1.0f});
  } catch (const InvalidArgument& e) {
    FERRY_THROW(InvalidArgument, "invalid --codec '", o.codec, "': ", e.what());
  }
  // EF21's aggregate integrates one mean of all workers' increments per step; a server that
  // applies each push as it arrives would apply the sum of every worker's estimate each time.
  FERRY_REQUIRE(!adamw || !split.increments, "invalid --codec '", o.codec,
                "': ef21's aggregate integrates the workers' velocity increments, which --optimizer adamw does not "
                "keep; drop ef21=1 or use --optimizer sgd");
  FERRY_REQUIRE(!split.increments || world_layout(o).num_servers == 0 || info.server_mode == ps::ServerMode::kSync,
                "invalid --codec '", o.codec, "': ef21 needs a synchronous aggregate and --algo ", info.name,
                " applies each push on arrival; drop ef21=1");
  canonical_pull_codec(o);
}

bool supports_determinism(const std::string& algo) {
  register_builtin_strategies();
  return strategy_info(algo).deterministic;
}

void parse_inject_nan(const std::string& spec, TrainOptions& o) {
  const auto comma = spec.find(',');
  try {
    std::size_t used = 0;
    const std::string step = spec.substr(0, comma);
    o.inject_nan_step = std::stoll(step, &used);
    FERRY_REQUIRE(used == step.size() && o.inject_nan_step >= 0, "bad step");
    o.inject_nan_count = 1;
    if (comma != std::string::npos) {
      const std::string count = spec.substr(comma + 1);
      o.inject_nan_count = std::stoll(count, &used);
      FERRY_REQUIRE(used == count.size() && o.inject_nan_count >= 1, "bad count");
    }
  } catch (const std::exception&) {
    FERRY_THROW(InvalidArgument, "invalid --inject-nan-at '", spec, "' (expected STEP[,COUNT], e.g. 5,3)");
  }
}

std::string codec_or_default(const TrainOptions& o) { return o.codec.empty() ? default_codec(o.algo) : o.codec; }

std::string canonical_codec(const TrainOptions& o) {
  try {
    return compress::canonical_codec_spec(codec_or_default(o));
  } catch (const InvalidArgument& e) {
    FERRY_THROW(InvalidArgument, "invalid --codec '", o.codec, "': ", e.what());
  }
}

std::string canonical_pull_codec(const TrainOptions& o) {
  if (o.pull_codec.empty()) return "";
  FERRY_REQUIRE(world_layout(o).num_servers > 0, "--compress-pull needs the parameter-server topology (",
                algo_name(o.algo), " runs on allreduce, which has no pulls)");
  try {
    return pull_codec_spec(o.pull_codec);
  } catch (const InvalidArgument& e) {
    FERRY_THROW(InvalidArgument, "invalid --compress-pull '", o.pull_codec, "': ", e.what());
  }
}

WorldLayout world_layout(const TrainOptions& o) {
  register_builtin_strategies();
  bool ps = resolve_topology(strategy_info(o.algo), o.topology) == Topology::kParameterServer;
  return WorldLayout{o.num_workers, ps ? o.num_servers : 0};
}

}  // namespace ferry::train
