#include "train/ps_setup.h"

namespace ferry::train {

std::unique_ptr<ps::KeyLayout> make_key_layout(const std::vector<std::size_t>& numels, const WorldLayout& world) {
  return std::make_unique<ps::KeyLayout>(numels, world.num_servers);
}

void init_from_worker0(ps::KVWorker& kv, comm::Communicator& comm, FlatParams& params) {
  if (comm.rank() == 0) kv.init(params.weights());
  kv.pull_all(params.weights(), 0).wait();
}

void run_parameter_server(comm::Communicator& comm, const WorldLayout& world, const std::vector<std::size_t>& numels,
                          ps::ServerMode mode, const ps::SgdOptions& sgd, const std::string& codec,
                          const TensorShapes& shapes) {
  auto layout = make_key_layout(numels, world);
  ps::ServerOptions o;
  o.mode = mode;
  o.num_workers = world.num_workers;
  o.first_worker_rank = 0;
  o.sgd = sgd;
  const int server_index = comm.rank() - world.first_server_rank();
  if (!is_uncompressed(codec)) o.decoder = make_push_decoder(codec, *layout, shapes, server_index);
  ps::KVServer server(&comm, layout.get(), server_index, o);
  server.run();
}

}  // namespace ferry::train
