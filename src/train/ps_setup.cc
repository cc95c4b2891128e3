#include "train/ps_setup.h"

#include "core/metrics.h"
#include "train/checkpoint.h"
#include "train/worker_momentum.h"

namespace ferry::train {

std::unique_ptr<ps::KeyLayout> make_key_layout(const std::vector<std::size_t>& numels, const WorldLayout& world) {
  return std::make_unique<ps::KeyLayout>(numels, world.num_servers);
}

void init_from_worker0(ps::KVWorker& kv, comm::Communicator& comm, FlatParams& params) {
  if (comm.rank() == 0) kv.init(params.weights());
  kv.pull_all(params.weights(), 0).wait();
}

std::unique_ptr<ps::KVWorker> make_kv_worker(comm::Communicator& comm, const ps::KeyLayout& layout,
                                             const StrategyOptions& options, const TensorShapes& shapes) {
  auto kv = std::make_unique<ps::KVWorker>(&comm, &layout, options.world.first_server_rank());
  if (!options.pull_codec.empty()) {
    std::vector<int> all_keys;
    for (const auto& k : layout.keys()) all_keys.push_back(k.key);
    kv->compress_pulls(make_key_decoder(options.pull_codec, layout, shapes, all_keys));
  }
  return kv;
}

void run_parameter_server(comm::Communicator& comm, const WorldLayout& world, const std::vector<std::size_t>& numels,
                          ps::ServerMode mode, const ps::SgdOptions& sgd, const std::string& codec,
                          const TensorShapes& shapes, const std::string& pull_codec,
                          const ServerCheckpointing& checkpointing) {
  auto layout = make_key_layout(numels, world);
  ps::ServerOptions o;
  o.mode = mode;
  o.num_workers = world.num_workers;
  o.first_worker_rank = 0;
  // With a codec with error feedback the momentum and weight decay may live on the workers.
  o.sgd = split_optimizer(codec, sgd).aggregate;
  const int server_index = comm.rank() - world.first_server_rank();
  if (!is_uncompressed(codec)) o.decoder = make_push_decoder(codec, *layout, shapes, server_index);
  if (!pull_codec.empty()) o.pull_encoder = make_pull_encoder(pull_codec, *layout, shapes, server_index);
  if (!checkpointing.root.empty()) {
    const std::string root = checkpointing.root;
    o.on_checkpoint = [root, server_index](std::uint64_t iterations, const ps::KVServer& s) {
      StateWriter out;
      for (const ps::KeySnapshot& k : s.snapshot()) {
        const std::string p = "key" + std::to_string(k.key) + ".";
        out.put(p + "weights", k.weights);
        out.put(p + "velocity", k.velocity);
        out.put_u64(p + "version", k.version);
      }
      const std::string dir = checkpoint_tmp_dir(root, static_cast<std::int64_t>(iterations));
      make_dirs(dir);
      out.write_file(server_state_path(dir, server_index));
    };
  }
  ps::KVServer server(&comm, layout.get(), server_index, o);
  if (!checkpointing.resume_dir.empty()) {
    StateReader in = StateReader::read_file(server_state_path(checkpointing.resume_dir, server_index));
    std::vector<ps::KeySnapshot> keys;
    for (int key : layout->keys_of_server(server_index)) {
      const std::string p = "key" + std::to_string(key) + ".";
      keys.push_back(ps::KeySnapshot{key, in.u64(p + "version"), in.floats(p + "weights"), in.floats(p + "velocity")});
    }
    server.restore(keys);
  }
  server.run();
}

}  // namespace ferry::train
