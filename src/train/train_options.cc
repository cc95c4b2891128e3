#include "train/train_options.h"

#include "compress/codec_registry.h"
#include "core/error.h"
#include "train/models/model.h"
#include "train/strategy.h"

namespace ferry::train {

void validate(const TrainOptions& o) {
  register_builtin_strategies();
  const StrategyInfo& info = strategy_info(o.algo);
  Topology topology = resolve_topology(info, o.topology);
  bool supported = false;
  for (auto t : info.topologies) supported |= t == topology;
  FERRY_REQUIRE(supported, "--algo ", o.algo, " does not run on --topology ", topology_name(topology));
  FERRY_REQUIRE(o.num_workers >= 1, "--np must be at least 1, got ", o.num_workers);
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
  FERRY_REQUIRE(o.epochs >= 1, "--epochs must be at least 1, got ", o.epochs);
  FERRY_REQUIRE(o.batch >= 1, "--batch must be at least 1, got ", o.batch);
  FERRY_REQUIRE(o.lr > 0, "--lr must be positive, got ", o.lr);
  FERRY_REQUIRE(o.momentum >= 0 && o.momentum < 1, "--momentum must be in [0, 1), got ", o.momentum);
  FERRY_REQUIRE(o.max_steps >= 0, "--max-steps must be >= 0, got ", o.max_steps);
  canonical_codec(o);
  validate_delayed_options(o.delayed);
  validate_algorithm_codec(o.algo, canonical_codec(o));
}

std::string canonical_codec(const TrainOptions& o) {
  try {
    return compress::canonical_codec_spec(o.codec);
  } catch (const InvalidArgument& e) {
    FERRY_THROW(InvalidArgument, "invalid --codec '", o.codec, "': ", e.what());
  }
}

WorldLayout world_layout(const TrainOptions& o) {
  register_builtin_strategies();
  bool ps = resolve_topology(strategy_info(o.algo), o.topology) == Topology::kParameterServer;
  return WorldLayout{o.num_workers, ps ? o.num_servers : 0};
}

}  // namespace ferry::train
