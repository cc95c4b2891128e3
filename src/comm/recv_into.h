// A receive of a known size, completed when its ticket is waited for: the irecv of backends
// whose recv() already does the matching and whose sends never wait for a posted receive
// (threads-as-ranks; link emulation posts its inner receive at once, see shaped_communicator.cc).
#pragma once

#include <cstring>

#include "comm/communicator.h"
#include "core/error.h"

namespace ferry::comm {

// Copies a received message into `out`; a size mismatch is a FormatError naming both sizes.
inline void copy_message_into(const Message& m, std::span<std::byte> out) {
  if (m.data.size() != out.size())
    FERRY_THROW(FormatError, "message from rank ", m.src, " tag ", m.tag, " has ", m.data.size(),
                " bytes, expected ", out.size());
  if (!out.empty()) std::memcpy(out.data(), m.data.data(), out.size());
}

inline Ticket deferred_recv_into(Communicator& comm, int src, int tag, std::span<std::byte> out) {
  struct State : Ticket::State {
    Communicator* comm;  // the communicator outlives its tickets
    int src, tag;
    std::span<std::byte> out;
    bool finished = false;
    void wait() override {
      if (finished) return;
      copy_message_into(comm->recv(src, tag), out);
      finished = true;
    }
    bool test() override { return finished; }
  };
  auto s = std::make_unique<State>();
  s->comm = &comm;
  s->src = src;
  s->tag = tag;
  s->out = out;
  return Ticket(std::move(s));
}

}  // namespace ferry::comm
