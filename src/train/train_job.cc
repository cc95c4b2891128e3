#include "train/train_job.h"

#include <filesystem>

#include "core/error.h"
#include "train/checkpoint.h"

namespace ferry::train {

StrategyOptions TrainJob::strategy_options(bool external_optimizer) const {
  StrategyOptions so{topology, world, sgd, codec, pull_codec, batch};
  so.algo = algo;
  so.external_optimizer = external_optimizer;
  return so;
}

nlohmann::json TrainJob::to_json() const {
  return {{"algo", algo},
          {"topology", topology_name(topology)},
          {"workers", world.num_workers},
          {"servers", world.num_servers},
          {"lr", sgd.lr},
          {"momentum", sgd.momentum},
          {"weight_decay", sgd.weight_decay},
          {"rescale", sgd.rescale},
          {"codec", codec},
          {"pull_codec", pull_codec},
          {"batch", batch},
          {"link_bytes_per_s", link.bandwidth_bytes_per_s},
          {"link_latency_s", link.latency_s},
          {"deterministic", deterministic},
          {"checkpoint_root", checkpoint_root},
          {"checkpoint_every", checkpoint_every},
          {"keep_checkpoints", keep_checkpoints},
          {"config", config},
          {"resume_dir", resume.dir},
          {"resume_iterations", resume.iterations}};
}

TrainJob TrainJob::from_json(const nlohmann::json& j) {
  TrainJob t;
  try {
    t.algo = j.at("algo").get<std::string>();
    t.topology = parse_topology(j.at("topology").get<std::string>());
    t.world = WorldLayout{j.at("workers").get<int>(), j.at("servers").get<int>()};
    t.sgd = ps::SgdOptions{j.at("lr").get<float>(), j.at("momentum").get<float>(), j.at("weight_decay").get<float>(),
                           j.at("rescale").get<float>()};
    t.codec = j.at("codec").get<std::string>();
    t.pull_codec = j.at("pull_codec").get<std::string>();
    t.batch = j.at("batch").get<std::int64_t>();
    t.link = comm::LinkOptions{j.at("link_bytes_per_s").get<double>(), j.at("link_latency_s").get<double>()};
    t.deterministic = j.at("deterministic").get<bool>();
    t.checkpoint_root = j.at("checkpoint_root").get<std::string>();
    t.checkpoint_every = j.at("checkpoint_every").get<std::int64_t>();
    t.keep_checkpoints = j.at("keep_checkpoints").get<int>();
    t.config = j.at("config");
    t.resume = ResumePoint{j.at("resume_dir").get<std::string>(), j.at("resume_iterations").get<std::int64_t>()};
  } catch (const nlohmann::json::exception& e) {
    FERRY_THROW(FormatError, "training job: ", e.what());
  }
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
  return {
      {"algo", o.algo}, {"topology", o.topology}, {"np", o.num_workers}, {"servers", o.num_servers},
      {"model", o.model}, {"epochs", o.epochs}, {"max_steps", o.max_steps}, {"batch", o.batch}, {"lr", o.lr},
      {"momentum", o.momentum}, {"weight_decay", o.weight_decay}, {"link_bytes_per_s", o.link.bandwidth_bytes_per_s},
      {"link_latency_s", o.link.latency_s}, {"codec", canonical_codec(o)}, {"seed", o.seed},
      {"data", o.data_dir}, {"train_limit", o.train_limit}, {"test_limit", o.test_limit},
      {"checkpoint_every", o.checkpoint_every}, {"deterministic", o.deterministic},
      {"max_bad_steps", o.max_bad_steps},
  };
}

TrainJob make_train_job(const TrainOptions& o) {
  validate(o);
  TrainJob t;
  t.algo = canonical_algo(o.algo);
  t.topology = resolve_topology(strategy_info(o.algo), o.topology);
  t.world = world_layout(o);
  t.sgd = ps::SgdOptions{o.lr, o.momentum, o.weight_decay, 1.0f};
  t.codec = canonical_codec(o);
  t.pull_codec = canonical_pull_codec(o);
  t.batch = o.batch;
  t.link = o.link;
  t.deterministic = o.deterministic;
  // --checkpoint-every writes to checkpoint_root() (<out>/checkpoints by default); a directory
  // given alone takes the checkpoints the caller asks for (DistributedOptimizer::save_checkpoint).
  t.checkpoint_root = o.checkpoint_every > 0 ? checkpoint_root(o) : o.checkpoint_dir;
  t.checkpoint_every = o.checkpoint_every;
  t.keep_checkpoints = o.keep_checkpoints;
  t.config = job_config(o);
  t.resume = find_resume_point(o.resume, t.config, t.world);
  return t;
}

}  // namespace ferry::train
