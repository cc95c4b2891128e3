// Wire protocol between workers and servers. Requests go to a server on kTagPsRequest with a fixed
// header followed by the payload; a pull is answered on kTagPsReplyBase + key with the key's
// weights as raw fp32, so the worker can receive straight into its parameter buffer.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "comm/communicator.h"
#include "core/error.h"

namespace ferry::ps {

// Tags: comm/message_tags.h (kTagPsRequest, kTagPsCheckpointAck, kTagPsReplyBase + key).
inline constexpr int kMaxKeys = comm::kMaxUserTag - comm::kTagPsReplyBase;

enum class Op : std::uint32_t {
  kInit = 1,      // payload: the key's initial weights (fp32)
  kPush = 2,      // payload: a gradient for the key, encoded per `flags`
  kPull = 3,      // no payload; answered once the key's version >= header.version
  kShutdown = 4,  // this worker is done
  kCheckpoint = 5,  // header.version = iterations done; every push before it is in the state
};

// Encoding of a push payload.
enum class PayloadFormat : std::uint32_t {
  kFloat32 = 0,  // raw fp32 values
  kCodec = 1,    // packed by the key's codec (compress module)
  kSkip = 2,     // no payload: this worker's gradient was not finite (NaN or Inf); the server
                 // applies no update for this push (async) or for the whole round (sync)
};

struct RequestHeader {
  Op op;
  std::int32_t key;
  std::uint64_t version;  // kPull: the least version wanted
  std::int32_t worker;
  PayloadFormat format;
};
static_assert(sizeof(RequestHeader) == 24);

inline std::vector<std::byte> make_request(const RequestHeader& h, std::span<const std::byte> payload) {
  std::vector<std::byte> out(sizeof h + payload.size());
  std::memcpy(out.data(), &h, sizeof h);
  if (!payload.empty()) std::memcpy(out.data() + sizeof h, payload.data(), payload.size());
  return out;
}

inline RequestHeader parse_header(const comm::Message& m) {
  if (m.data.size() < sizeof(RequestHeader))
    FERRY_THROW(FormatError, "request from rank ", m.src, " is ", m.data.size(), " bytes, shorter than its header");
  RequestHeader h;
  std::memcpy(&h, m.data.data(), sizeof h);
  return h;
}

inline std::span<const std::byte> payload_of(const comm::Message& m) {
  return std::span<const std::byte>(m.data).subspan(sizeof(RequestHeader));
}

}  // namespace ferry::ps
