// The worker side of the parameter server (ps-lite's KVWorker): push gradients and pull weights
// per key, each returning a ticket, so a strategy decides what overlaps with what.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "comm/communicator.h"
#include "ps/key_layout.h"
#include "ps/kv_server.h"
#include "ps/protocol.h"

namespace ferry::ps {

class KVWorker {
 public:
  // `comm` and `layout` must outlive the worker. Servers are ranks first_server_rank ..
  // first_server_rank + layout.num_servers() - 1.
  KVWorker(comm::Communicator* comm, const KeyLayout* layout, int first_server_rank);

  // Sends the initial weights of every key (one worker does this before anyone pulls).
  void init(std::span<const float> flat_weights);
  // Pushes `grad` (the key's slice, copied now) as fp32.
  comm::Ticket push(int key, std::span<const float> grad);
  // Pushes an already encoded payload for `key`.
  comm::Ticket push_encoded(int key, std::vector<std::byte> payload);
  // A push that carries no gradient: this worker's gradient was not finite, so the server
  // applies no update for this push (async) or for the whole round it belongs to (sync).
  // Counts as a push (versions advance), so nobody waits for it.
  comm::Ticket push_skip(int key);
  comm::Ticket push_skip_all();
  // Pulls the key's weights into `out` (must stay valid until the ticket is waited for), once the
  // server has applied at least `min_version` updates to it.
  comm::Ticket pull(int key, std::span<float> out, std::uint64_t min_version);

  // Whole-model conveniences over the flat vector: one ticket for all keys.
  comm::Ticket push_all(std::span<const float> flat_grad);
  comm::Ticket pull_all(std::span<float> flat_weights, std::uint64_t min_version);

  // The servers answer pulls compressed (ServerOptions::pull_encoder): from now on pull() keeps a
  // replica of every key, adds each decoded reply to it (`decoder`, the pull codec's decode_add)
  // and copies the replica out. Call before the first pull.
  void compress_pulls(PayloadDecoder decoder);

  // Checkpoint barrier: tells every server that all of this worker's pushes up to `iterations`
  // are sent, and returns once each server has written its state (after every worker's marker).
  // Call with no push or pull in flight.
  void checkpoint(std::uint64_t iterations);

  // Tells every server this worker is done.
  void shutdown();

  const KeyLayout& layout() const { return *layout_; }

 private:
  int server_rank(int key) const { return first_server_rank_ + layout_->key(key).server; }
  comm::Ticket send_request(int key, Op op, std::uint64_t version, PayloadFormat format,
                            std::span<const std::byte> payload);

  void receive_compressed_pull(int key, std::span<float> out);

  comm::Communicator* comm_;  // see constructor
  const KeyLayout* layout_;   // see constructor
  int first_server_rank_;
  PayloadDecoder pull_decoder_;               // set by compress_pulls
  std::vector<std::vector<float>> replicas_;  // compressed pulls: by key, empty before its first pull
};

}  // namespace ferry::ps
