// A parameter-server rank: owns the keys of its shard, applies the optimizer, answers pulls.
//
//   sync  (MXNet dist_sync): the i-th push of a key from every one of the N workers is summed
//         in worker order (deterministic whatever the arrival order),
//         then one optimizer step runs with rescale 1/N and the key's version increments; a pull
//         asking for version v waits until v updates have been applied.
//   async (MXNet dist_async, Hogwild-style ASGD): every push is applied as it arrives.
//
// Pull replies are raw fp32 (as in MXNet) unless a pull encoder is set: then each reply carries a
// 4-byte PayloadFormat and the compressed change since that worker's previous pull.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "ps/key_layout.h"
#include "ps/protocol.h"
#include "ps/sgd_optimizer.h"

namespace ferry::ps {

enum class ServerMode { kSync, kAsync };

// Decodes a codec payload of a key and adds it into `acc` (set by the compress integration).
using PayloadDecoder = std::function<void(int key, std::span<const std::byte> payload, std::span<float> acc)>;
using PushDecoder = PayloadDecoder;
// Encodes the change of a key's weights since `worker` last pulled it into `payload`. It must
// keep error feedback per (key, worker): what it drops now is sent with a later pull.
using PullEncoder =
    std::function<void(int key, int worker, std::span<const float> change, std::vector<std::byte>& payload)>;

class KVServer;

// One key's state, as a checkpoint holds it.
struct KeySnapshot {
  int key = 0;
  std::uint64_t version = 0;
  std::vector<float> weights;
  std::vector<float> velocity;
};

// Called once every worker has sent its checkpoint marker for `iterations` (all their earlier
// pushes applied); the server answers the markers after it returns.
using CheckpointHook = std::function<void(std::uint64_t iterations, const KVServer& server)>;

struct ServerOptions {
  ServerMode mode = ServerMode::kSync;
  int num_workers = 1;    // pushes per round in sync mode; shutdowns to wait for
  int first_worker_rank = 0;  // workers are ranks first_worker_rank .. +num_workers-1
  SgdOptions sgd;         // optimizer; rescale is set to 1/num_workers unless overridden
  bool average_pushes = true;  // rescale = 1/num_workers (mean of the workers' gradients)
  PushDecoder decoder;    // needed only when workers push codec payloads
  // Compressed pulls (--compress-pull; both or neither). A worker's first pull of a key is fp32;
  // every later reply is pull_encoder(weights now - weights at its previous pull), and the
  // worker adds the decoded payload to its replica (KVWorker::compress_pulls).
  PullEncoder pull_encoder;
  CheckpointHook on_checkpoint;  // writes the server's checkpoint state (none: markers are just answered)
};

class KVServer {
 public:
  // `comm` and `layout` must outlive the server; `server_index` selects the shard.
  KVServer(comm::Communicator* comm, const KeyLayout* layout, int server_index, ServerOptions options);
  ~KVServer();
  // Serves requests until every worker has sent kShutdown.
  void run();

  // Weights of a key (for tests and checkpoints).
  std::span<const float> weights(int key) const;
  std::uint64_t version(int key) const;
  // Updates not applied because a worker sent a skip push or the gradient sum was not finite
  // (per key: a skipped sync round of 3 keys counts 3).

  // Checkpoints: the state of every key this server owns. Only at a quiet point (every worker's
  // marker received: no round half-summed); InternalError otherwise.
  std::vector<KeySnapshot> snapshot() const;
  // Replaces the keys' state before run(); the workers' init is then ignored (the restored
  // weights win). FormatError when the snapshot does not match this server's shard.
  void restore(const std::vector<KeySnapshot>& keys);

 private:
  struct KeyState;
  void on_init(int worker, int key, std::span<const std::byte> payload);
  void on_push(int worker, int key, const RequestHeader& h, std::span<const std::byte> payload);
  void on_pull(int worker, int key, std::uint64_t min_version);
  void on_checkpoint(int worker, std::uint64_t iterations);
  void apply_ready_rounds(KeyState& k);
  void answer_pulls(KeyState& k);
  void reply(KeyState& k, int worker);
  KeyState& state(int key, int from_rank);

  comm::Communicator* comm_;  // see constructor
  const KeyLayout* layout_;   // see constructor
  int server_index_;
  ServerOptions options_;
  std::map<int, std::unique_ptr<KeyState>> keys_;
  std::deque<comm::Ticket> replies_;  // sends in flight
  bool restored_ = false;             // restore() ran: kInit is ignored
  std::map<std::uint64_t, std::vector<int>> checkpoint_markers_;  // iterations -> workers that sent it
};

}  // namespace ferry::ps
