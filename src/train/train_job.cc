#include "train/train_job.h"

#include <filesystem>

#include "core/error.h"
#include "train/checkpoint.h"
#include "train/train_option_fields.h"

namespace ferry::train {

Topology TrainJob::topology() const { return parse_topology(options.topology); }

StrategyOptions TrainJob::strategy_options(bool external_optimizer) const {
  StrategyOptions so{topology(), world(), sgd(), options.codec, options.pull_codec, options.batch};
  so.algo = options.algo;
  so.optimizer = options.optimizer;
  so.lr_schedule = options.lr_schedule;
  so.external_optimizer = external_optimizer;
  return so;
}

nlohmann::json TrainJob::to_json() const {
  nlohmann::json j = options_json(options, OptionPlace::kJob);
  j.update({{"workers", options.num_workers},
            {"rescale", rescale},
            {"checkpoint_root", checkpoint_root},
            {"config", config},
            {"resume_dir", resume.dir},
            {"resume_iterations", resume.iterations}});
  return j;
}

TrainJob TrainJob::from_json(const nlohmann::json& j) {
  TrainJob t;
  read_job_options(j, t.options);
  try {
    t.options.num_workers = j.at("workers").get<int>();
    t.rescale = j.at("rescale").get<float>();
    t.checkpoint_root = j.at("checkpoint_root").get<std::string>();
    t.config = j.at("config");
    t.resume = ResumePoint{j.at("resume_dir").get<std::string>(), j.at("resume_iterations").get<std::int64_t>()};
  } catch (const nlohmann::json::exception& e) {
    FERRY_THROW(FormatError, "training job: ", e.what());
  }
  t.topology();  // its name checked now, as the keys are
  return t;
}

namespace {

// Where --checkpoint-every writes: --checkpoint-dir, else <out>/checkpoints, else "".
std::string checkpoint_root(const TrainOptions& o) {
  if (!o.checkpoint_dir.empty()) return o.checkpoint_dir;
  if (!o.out_dir.empty()) return (std::filesystem::path(o.out_dir) / "checkpoints").string();
  return "";
}

}  // namespace

nlohmann::json job_config(const TrainOptions& o) {
  TrainOptions recorded = o;
  recorded.codec = canonical_codec(o);
  return options_json(recorded, OptionPlace::kConfig);
}

TrainJob make_train_job(const TrainOptions& given) {
  validate(given);
  const TrainOptions o = with_optimizer_defaults(given);
  TrainJob t;
  t.options = o;
  t.options.algo = canonical_algo(o.algo);
  t.options.topology = topology_name(resolve_topology(strategy_info(o.algo), o.topology));
  t.options.num_servers = world_layout(o).num_servers;
  t.options.codec = canonical_codec(o);
  t.options.pull_codec = canonical_pull_codec(o);
  // --checkpoint-every writes to checkpoint_root() (<out>/checkpoints by default); a directory
  // given alone takes the checkpoints the caller asks for (DistributedOptimizer::save_checkpoint).
  t.checkpoint_root = o.checkpoint_every > 0 ? checkpoint_root(o) : o.checkpoint_dir;
  t.config = job_config(o);
  t.resume = find_resume_point(o.resume, t.config, t.world());
  return t;
}

}  // namespace ferry::train
