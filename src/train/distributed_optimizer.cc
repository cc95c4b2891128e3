#include "train/distributed_optimizer.h"

#include <span>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "comm/message_tags.h"
#include "core/error.h"
#include "train/checkpoint.h"
#include "train/checkpoint_coordinator.h"
#include "train/flat_params.h"
#include "train/gradient_codecs.h"
#include "train/strategy.h"
#include "train/train_job.h"
#include "train/train_options.h"
#include "train/worker_context.h"

namespace ferry::train {
namespace {

// The training options these optimizer options stand for, so that one validator (train_options.h)
// checks both `ferry train`'s flags and this API.
TrainOptions as_train_options(const DistributedOptimizerOptions& o, int world_size) {
  register_builtin_strategies();
  TrainOptions t = o.train;
  t.algo = canonical_algo(o.train.algo);  // an unknown name or key first
  const Topology topology = resolve_topology(strategy_info(t.algo), t.topology);
  t.num_servers = topology == Topology::kParameterServer ? o.train.num_servers : 0;
  t.num_workers = world_size - t.num_servers;
  t.oversubscribe = true;  // the world exists already: its size is the launcher's business
  return t;
}

// The names of the strategies that take the caller's optimizer, for the message above.
std::string external_optimizer_algos() {
  std::string names;
  for (const auto& n : strategy_names())
    if (strategy_info(n).external_optimizer) names += (names.empty() ? "" : ", ") + n;
  return names;
}

// The checks of this API's own options; the rest are ferry train's, on as_train_options().
void validate_optimizer_options(const DistributedOptimizerOptions& o, int world_size) {
  register_builtin_strategies();
  const TrainOptions& t = o.train;
  canonical_algo(t.algo);  // an unknown algorithm, key or value first, whatever the world
  FERRY_REQUIRE(!o.external_optimizer || strategy_info(t.algo).external_optimizer, "optimizer: --algo ",
                algo_name(t.algo), " runs ferry's own SGD update; only ", external_optimizer_algos(),
                " step with the caller's optimizer");
  const Topology topology = resolve_topology(strategy_info(t.algo), t.topology);
  FERRY_REQUIRE(t.num_servers < world_size || topology == Topology::kAllreduce, "--servers ", t.num_servers,
                " leaves no worker in a world of ", world_size, " ranks");
}

}  // namespace

void validate(const DistributedOptimizerOptions& o, int world_size) {
  validate_optimizer_options(o, world_size);
  validate(as_train_options(o, world_size));  // every check of ferry train's flags (ps needs servers, ...)
}

DistributedOptimizer::DistributedOptimizer(std::vector<at::Tensor> params, comm::Communicator* comm,
                                           DistributedOptimizerOptions options, bool announce_to_servers)
    : options_(std::move(options)), params_(std::move(params)) {
  validate_optimizer_options(options_, comm->size());
  // Validated as ferry train's flags, and resolved (the checkpoint to resume checked to fit), so
  // that the servers need none of the algorithm's defaults.
  TrainJob job = make_train_job(as_train_options(options_, comm->size()));
  if (announce_to_servers && comm->rank() == 0) {
    const std::string text = nlohmann::json{{"job", job.to_json()}, {"shapes", shapes_of(params_)}}.dump();
    for (int s = job.world().num_workers; s < comm->size(); ++s)
      comm->send(s, comm::kTagTrainJob, std::as_bytes(std::span(text.data(), text.size())));
  }
  context_ = std::make_unique<WorkerContext>(std::move(job), *comm);
  iteration_ = context_->job().resume.iterations;
  if (context_->is_server()) return;
  flat_ = std::make_unique<FlatParams>(params_);
  strategy_ = context_->make_strategy(options_.external_optimizer);
  strategy_->setup(*flat_);
  layer_gate_ = strategy_->layer_gate();
  context_->resume(*strategy_, *flat_);
  checkpoints_ = context_->checkpoints(1);
}

DistributedOptimizer::~DistributedOptimizer() = default;

bool DistributedOptimizer::is_server() const { return !strategy_; }

void DistributedOptimizer::serve() {
  FERRY_REQUIRE(is_server(), "serve() is for parameter-server ranks");
  context_->serve(shapes_of(params_));
}

std::string DistributedOptimizer::save_checkpoint() {
  FERRY_REQUIRE(!is_server(), "save_checkpoint() on a parameter-server rank");
  FERRY_REQUIRE(!finished_, "save_checkpoint() after finish()");
  FERRY_REQUIRE(!context_->job().checkpoint_root.empty(), "save_checkpoint(): no checkpoint_dir was given");
  // Every strategy saves the state of iteration_ complete steps (wfbp completes the buckets
  // still in flight first, whether or not a caller's layer gate would have).
  checkpoints_->save(iteration_, *strategy_, *flat_, WorkerLoopState{});
  return checkpoint_dir(context_->job().checkpoint_root, iteration_);
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
  const auto announced = nlohmann::json::parse(std::string(reinterpret_cast<const char*>(m.data.data()), m.data.size()));
  if (announced.is_null()) return false;
  TrainJob job = TrainJob::from_json(announced.at("job"));
  FERRY_CHECK(job.world().num_servers == num_servers, "the job announces ", job.world().num_servers,
              " servers; this world has ", num_servers);
  WorkerContext(std::move(job), *comm).serve(announced.at("shapes").get<TensorShapes>());
  return true;
}

double DistributedOptimizer::comm_wait_s() const { return strategy_ ? strategy_->comm_wait_s() : 0.0; }

std::uint64_t DistributedOptimizer::bytes_sent() const { return context_->comm().counters().bytes_sent; }

const TrainOptions& DistributedOptimizer::options() const { return context_->job().options; }

}  // namespace ferry::train
