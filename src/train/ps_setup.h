// Shared steps of every strategy that talks to parameter servers: the key layout of the model,
// the initial weights (worker 0 initialises, everybody pulls), and the server side of a rank.
#pragma once

#include <memory>

#include "ps/key_layout.h"
#include "ps/kv_server.h"
#include "ps/kv_worker.h"
#include "train/flat_params.h"
#include "train/gradient_codecs.h"
#include "train/strategy.h"

namespace ferry::train {

// The key layout every worker and server uses for a model of these tensor sizes.
std::unique_ptr<ps::KeyLayout> make_key_layout(const std::vector<std::size_t>& numels, const WorldLayout& world);
// Worker 0 sends its weights to the servers; every worker then pulls them (version 0).
void init_from_worker0(ps::KVWorker& kv, comm::Communicator& comm, FlatParams& params);
// The worker side of this rank; with a pull codec (StrategyOptions::pull_codec) pulls arrive
// compressed and are decoded into the KVWorker's replica.
std::unique_ptr<ps::KVWorker> make_kv_worker(comm::Communicator& comm, const ps::KeyLayout& layout,
                                             const StrategyOptions& options, const TensorShapes& shapes);
// Checkpoints of a server rank (checkpoint.h).
struct ServerCheckpointing {
  std::string root;        // where checkpoints are written; "" = this run writes none
  std::string resume_dir;  // checkpoint to restore before serving; "" = a fresh start
};

// Runs the server loop of this rank until every worker has shut down. With a codec other than
// "none" the server decodes the workers' pushes with one codec per key; `shapes` must then be the
// model's tensor shapes (as the workers see them) so that shape-aware codecs (PowerSGD) agree.
// A non-empty `pull_codec` compresses the pull replies (gradient_codecs.h, pull_codec_spec).
// The server's optimizer is split_optimizer(codec, sgd).aggregate (worker_momentum.h): without
// momentum and weight decay when the workers keep them.
void run_parameter_server(comm::Communicator& comm, const WorldLayout& world, const std::vector<std::size_t>& numels,
                          ps::ServerMode mode, const ps::SgdOptions& sgd, const std::string& codec = "none",
                          const TensorShapes& shapes = {}, const std::string& pull_codec = "",
                          const ServerCheckpointing& checkpointing = {});

}  // namespace ferry::train
