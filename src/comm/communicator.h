// The Communicator: the only way ferry's ranks talk. Point-to-point messages of any size,
// non-blocking variants returning tickets, the collectives training needs, byte counters.
// Backends: MpiCommunicator (processes), LocalCommunicator (threads, for tests); link emulation
// is a decorator (ShapedCommunicator) over either.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "comm/message_tags.h"  // every tag, and kMaxUserTag
#include "comm/ticket.h"

namespace ferry::comm {

inline constexpr int kAnySource = -1;

struct Message {
  int src = -1;
  int tag = -1;
  std::vector<std::byte> data;
};

// Bytes this rank handed to / received from the transport (payload bytes, as on the wire).
struct CommCounters {
  std::uint64_t bytes_sent = 0;
  std::uint64_t bytes_recv = 0;
  std::uint64_t messages_sent = 0;
  std::uint64_t messages_recv = 0;
};

// Every method is thread-safe: a rank's compute thread, its communication thread and a server
// loop may use one communicator at once. Messages between a pair of ranks with one tag arrive
// in the order they were sent.
class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Sends `data` to `dst`; returns when the buffer may be reused.
  virtual void send(int dst, int tag, std::span<const std::byte> data) = 0;
  // Receives the next message with `tag` from `src` (or kAnySource), of any size.
  virtual Message recv(int src, int tag) = 0;
  // Starts a send of `data` (owned by the operation); the ticket completes when it is sent.
  virtual Ticket isend(int dst, int tag, std::vector<std::byte> data) = 0;
  // Starts a receive of exactly out.size() bytes into `out`, which must stay valid until the
  // ticket is waited for; a message of another size is a FormatError at wait().
  virtual Ticket irecv(int src, int tag, std::span<std::byte> out) = 0;

  // Element-wise sum over all ranks, in place.
  virtual void allreduce_sum(std::span<float> data) = 0;
  virtual void allreduce_sum(std::span<double> data) = 0;
  // Copies root's `data` into every rank's `data` (same size everywhere).
  virtual void broadcast(std::span<std::byte> data, int root) = 0;
  // Every rank contributes a buffer of any size; every rank gets all of them, by rank.
  virtual std::vector<std::vector<std::byte>> allgather(std::span<const std::byte> mine) = 0;
  virtual void barrier() = 0;

  virtual CommCounters counters() const = 0;
};

}  // namespace ferry::comm
