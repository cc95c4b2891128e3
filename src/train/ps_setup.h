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
// Runs the server loop of this rank until every worker has shut down. With a codec other than
// "none" the server decodes the workers' pushes with one codec per key; `shapes` must then be the
// model's tensor shapes (as the workers see them) so that shape-aware codecs (PowerSGD) agree.
void run_parameter_server(comm::Communicator& comm, const WorldLayout& world, const std::vector<std::size_t>& numels,
                          ps::ServerMode mode, const ps::SgdOptions& sgd, const std::string& codec = "none",
                          const TensorShapes& shapes = {});

}  // namespace ferry::train
