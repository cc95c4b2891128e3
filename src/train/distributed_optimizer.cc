#include "train/distributed_optimizer.h"

#include <span>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "comm/link/link_options.h"
#include "comm/link/shaped_communicator.h"
#include "comm/message_tags.h"
#include "core/error.h"
#include "train/checkpoint.h"
#include "train/checkpoint_coordinator.h"
#include "train/flat_params.h"
#include "train/gradient_codecs.h"
#include "train/ps_setup.h"
#include "train/strategy.h"
#include "train/train_options.h"

namespace ferry::train {
namespace {

// The training options these optimizer options stand for, so that one validator (train_options.h)
// checks both `ferry train`'s flags and this API.
TrainOptions as_train_options(const DistributedOptimizerOptions& o, int world_size) {
  register_builtin_strategies();
  TrainOptions t;
  t.algo = canonical_algo(o.algo);  // an unknown name or key first
  t.topology = o.topology;
  const Topology topology = resolve_topology(strategy_info(o.algo), o.topology);
  t.num_servers = topology == Topology::kParameterServer ? o.num_servers : 0;
  t.num_workers = world_size - t.num_servers;
  t.lr = o.lr;
  t.momentum = o.momentum;
  t.weight_decay = o.weight_decay;
  t.codec = o.codec.empty() ? default_codec(t.algo) : o.codec;
  t.pull_codec = o.pull_codec;
  t.link = comm::parse_link_spec(o.link);
  if (o.batch > 0) t.batch = o.batch;
  t.checkpoint_dir = o.checkpoint_dir;
  t.keep_checkpoints = o.keep_checkpoints;
  t.resume = o.resume;
  t.oversubscribe = true;  // the world exists already: its size is the launcher's business
  return t;
}

StrategyOptions strategy_options(const TrainOptions& t, const DistributedOptimizerOptions& o) {
  const Topology topology = resolve_topology(strategy_info(t.algo), t.topology);
  StrategyOptions so{topology,
                     world_layout(t),
                     ps::SgdOptions{t.lr, t.momentum, t.weight_decay, 1.0f},
                     canonical_codec(t),
                     canonical_pull_codec(t),
                     o.batch};
  so.algo = t.algo;
  so.external_optimizer = o.external_optimizer;
  return so;
}

// The names of the strategies that take the caller's optimizer, for the message above.
std::string external_optimizer_algos() {
  std::string names;
  for (const auto& n : strategy_names())
    if (strategy_info(n).external_optimizer) names += (names.empty() ? "" : ", ") + n;
  return names;
}

std::vector<std::size_t> numels_of(const std::vector<at::Tensor>& params) {
  std::vector<std::size_t> n;
  for (const auto& p : params) n.push_back(static_cast<std::size_t>(p.numel()));
  return n;
}


}  // namespace

void validate(const DistributedOptimizerOptions& o, int world_size) {
  register_builtin_strategies();
  canonical_algo(o.algo);  // an unknown algorithm, key or value first, whatever the world
  FERRY_REQUIRE(!o.external_optimizer || strategy_info(o.algo).external_optimizer, "optimizer: --algo ",
                algo_name(o.algo), " runs ferry's own SGD update; only ", external_optimizer_algos(),
                " step with the caller's optimizer");
  const Topology topology = resolve_topology(strategy_info(o.algo), o.topology);
  FERRY_REQUIRE(o.num_servers < world_size || topology == Topology::kAllreduce, "--servers ", o.num_servers,
                " leaves no worker in a world of ", world_size, " ranks");
  validate(as_train_options(o, world_size));  // every check of ferry train's flags (ps needs servers, ...)
}

DistributedOptimizer::DistributedOptimizer(std::vector<at::Tensor> params, comm::Communicator* comm,
                                           DistributedOptimizerOptions options, bool announce_to_servers)
    : raw_comm_(comm), comm_(comm), options_(std::move(options)), params_(std::move(params)) {
  validate(options_, raw_comm_->size());
  const TrainOptions t = as_train_options(options_, raw_comm_->size());
  const ResumePoint resume = find_resume_point(t);  // checked to fit this job (check_resumable)
  resume_dir_ = resume.dir;
  iteration_ = resume.iterations;
  if (announce_to_servers && raw_comm_->rank() == 0) {
    // Resolved values only, so that the servers need none of the algorithm's defaults.
    nlohmann::json job = {{"algo", options_.algo},          {"topology", "ps"},
                          {"num_servers", t.num_servers},   {"lr", t.lr},
                          {"momentum", t.momentum},         {"weight_decay", t.weight_decay},
                          {"codec", canonical_codec(t)},    {"pull_codec", canonical_pull_codec(t)},
                          {"link", options_.link},          {"shapes", shapes_of(params_)},
                          {"checkpoint_dir", options_.checkpoint_dir}, {"resume", resume.dir}};
    const std::string text = job.dump();
    for (int s = t.num_workers; s < raw_comm_->size(); ++s)
      raw_comm_->send(s, comm::kTagTrainJob, std::as_bytes(std::span(text.data(), text.size())));
  }
  if (t.link.enabled()) {
    shaped_ = std::make_unique<comm::ShapedCommunicator>(raw_comm_, t.link);
    comm_ = shaped_.get();
  }
  const StrategyOptions so = strategy_options(t, options_);
  codec_ = so.codec;
  algo_ = so.algo;
  if (so.world.is_server(comm_->rank())) return;
  flat_ = std::make_unique<FlatParams>(params_);
  strategy_ = strategy_info(options_.algo).make(StrategyContext{comm_, so});
  strategy_->setup(*flat_);
  layer_gate_ = strategy_->layer_gate();
  if (!resume.dir.empty()) load_worker_state(resume, comm_->rank(), *strategy_, *flat_);
  if (!options_.checkpoint_dir.empty()) {
    const WorldLayout& w = so.world;
    CheckpointPlan plan{options_.checkpoint_dir, 0, options_.keep_checkpoints, comm_->rank(), w.num_workers, 1,
                        {{"topology", topology_name(so.topology)}, {"workers", w.num_workers},
                         {"servers", w.num_servers}},
                        options_to_json(t)};
    checkpoints_ = std::make_unique<CheckpointCoordinator>(*raw_comm_, std::move(plan), iteration_);
  }
}

DistributedOptimizer::~DistributedOptimizer() = default;

bool DistributedOptimizer::is_server() const { return !strategy_; }

void DistributedOptimizer::serve() {
  FERRY_REQUIRE(is_server(), "serve() is for parameter-server ranks");
  const TrainOptions t = as_train_options(options_, raw_comm_->size());
  const StrategyOptions so = strategy_options(t, options_);
  run_parameter_server(*comm_, so.world, numels_of(params_), strategy_info(options_.algo).server_mode, so.sgd,
                       so.codec, shapes_of(params_), so.pull_codec,
                       ServerCheckpointing{options_.checkpoint_dir, resume_dir_});
}

std::string DistributedOptimizer::save_checkpoint() {
  FERRY_REQUIRE(!is_server(), "save_checkpoint() on a parameter-server rank");
  FERRY_REQUIRE(!finished_, "save_checkpoint() after finish()");
  FERRY_REQUIRE(checkpoints_, "save_checkpoint(): no checkpoint_dir was given");
  // Every strategy saves the state of iteration_ complete steps (wfbp completes the buckets
  // still in flight first, whether or not a caller's layer gate would have).
  checkpoints_->save(iteration_, *strategy_, *flat_, WorkerLoopState{});
  return checkpoint_dir(options_.checkpoint_dir, iteration_);
}

void DistributedOptimizer::zero_grad() {
  FERRY_REQUIRE(!is_server(), "zero_grad() on a parameter-server rank");
  flat_->zero_grads();
}

void DistributedOptimizer::step() {
  FERRY_REQUIRE(!is_server(), "step() on a parameter-server rank; call serve() there");
  FERRY_REQUIRE(!finished_, "step() after finish()");
  flat_->gather_grads();
  strategy_->step(*flat_, iteration_++);
  // wfbp without the caller's per-layer gate: every pending update lands before step() returns,
  // so the next forward reads this step's weights (without wfbp's forward overlap).
  if (layer_gate_ && !caller_gates_) strategy_->complete(*flat_);
}

std::function<void(std::size_t, std::size_t)> DistributedOptimizer::take_layer_gate() {
  FERRY_REQUIRE(!is_server(), "take_layer_gate() on a parameter-server rank");
  if (layer_gate_) caller_gates_ = true;
  return layer_gate_;
}

void DistributedOptimizer::finish() {
  if (is_server() || finished_) return;
  strategy_->finish(*flat_);
  finished_ = true;
}

void DistributedOptimizer::announce_no_job(comm::Communicator* comm, int num_servers) {
  const std::string text = "null";
  for (int s = comm->size() - num_servers; s < comm->size(); ++s)
    comm->send(s, comm::kTagTrainJob, std::as_bytes(std::span(text.data(), text.size())));
}

bool DistributedOptimizer::serve_announced_job(comm::Communicator* comm, int num_servers) {
  const comm::Message m = comm->recv(0, comm::kTagTrainJob);
  const auto job = nlohmann::json::parse(std::string(reinterpret_cast<const char*>(m.data.data()), m.data.size()));
  if (job.is_null()) return false;
  FERRY_CHECK(job.at("num_servers").get<int>() == num_servers, "the job announces ", job.at("num_servers").get<int>(),
              " servers; this world has ", num_servers);
  DistributedOptimizerOptions o;
  o.algo = job.at("algo");
  o.topology = job.at("topology");
  o.num_servers = num_servers;
  o.lr = job.at("lr");
  o.momentum = job.at("momentum");
  o.weight_decay = job.at("weight_decay");
  o.codec = job.at("codec");
  o.pull_codec = job.at("pull_codec");
  o.link = job.at("link");
  o.checkpoint_dir = job.at("checkpoint_dir");
  o.resume = job.at("resume");
  std::vector<at::Tensor> params;
  for (const auto& shape : job.at("shapes").get<TensorShapes>()) params.push_back(at::empty(shape));
  DistributedOptimizer server(std::move(params), comm, o);
  server.serve();
  return true;
}

double DistributedOptimizer::comm_wait_s() const { return strategy_ ? strategy_->comm_wait_s() : 0.0; }

std::uint64_t DistributedOptimizer::bytes_sent() const { return comm_->counters().bytes_sent; }

}  // namespace ferry::train
