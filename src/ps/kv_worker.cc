#include "ps/kv_worker.h"

#include <algorithm>
#include <cstring>
#include <future>

#include "core/error.h"

namespace ferry::ps {

KVWorker::KVWorker(comm::Communicator* comm, const KeyLayout* layout, int first_server_rank)
    : comm_(comm), layout_(layout), first_server_rank_(first_server_rank) {
  FERRY_REQUIRE(static_cast<int>(layout_->keys().size()) <= kMaxKeys, "model has ", layout_->keys().size(),
                " keys; at most ", kMaxKeys, " are supported");
  FERRY_REQUIRE(first_server_rank + layout->num_servers() <= comm->size(), "servers ranks ", first_server_rank,
                "..", first_server_rank + layout->num_servers() - 1, " do not exist in a world of ", comm->size());
}

comm::Ticket KVWorker::send_request(int key, Op op, std::uint64_t version, PayloadFormat format,
                                    std::span<const std::byte> payload) {
  RequestHeader h{op, key, version, comm_->rank(), format};
  return comm_->isend(server_rank(key), comm::kTagPsRequest, make_request(h, payload));
}

void KVWorker::init(std::span<const float> flat) {
  FERRY_CHECK_EQ(flat.size(), layout_->total_elements());
  std::vector<comm::Ticket> sends;
  for (const auto& k : layout_->keys())
    sends.push_back(send_request(k.key, Op::kInit, 0, PayloadFormat::kFloat32,
                                 std::as_bytes(flat.subspan(k.offset, k.length))));
  for (auto& t : sends) t.wait();
}

comm::Ticket KVWorker::push(int key, std::span<const float> grad) {
  FERRY_CHECK_EQ(grad.size(), layout_->key(key).length, "key ", key);
  return send_request(key, Op::kPush, 0, PayloadFormat::kFloat32, std::as_bytes(grad));
}

comm::Ticket KVWorker::push_encoded(int key, std::vector<std::byte> payload) {
  return send_request(key, Op::kPush, 0, PayloadFormat::kCodec, payload);
}

comm::Ticket KVWorker::push_skip(int key) {
  return send_request(key, Op::kPush, 0, PayloadFormat::kSkip, {});
}

comm::Ticket KVWorker::push_skip_all() {
  std::vector<comm::Ticket> sends;
  for (const auto& k : layout_->keys()) sends.push_back(push_skip(k.key));
  return comm::when_all(std::move(sends));
}

void KVWorker::compress_pulls(PayloadDecoder decoder) {
  FERRY_CHECK(decoder, "compressed pulls need a decoder");
  pull_decoder_ = std::move(decoder);
  replicas_.assign(layout_->keys().size(), {});
}

void KVWorker::receive_compressed_pull(int key, std::span<float> out) {
  comm::Message m = comm_->recv(server_rank(key), comm::kTagPsReplyBase + key);
  PayloadFormat format;
  if (m.data.size() < sizeof format)
    FERRY_THROW(FormatError, "pull reply for key ", key, " from rank ", m.src, " is ", m.data.size(), " bytes");
  std::memcpy(&format, m.data.data(), sizeof format);
  auto payload = std::span<const std::byte>(m.data).subspan(sizeof format);
  std::vector<float>& replica = replicas_[key];
  if (format == PayloadFormat::kFloat32) {
    if (payload.size() != out.size_bytes())
      FERRY_THROW(FormatError, "pull reply for key ", key, ": ", payload.size(), " bytes, expected ", out.size_bytes());
    replica.resize(out.size());
    std::memcpy(replica.data(), payload.data(), payload.size());
  } else {
    if (replica.empty())
      FERRY_THROW(FormatError, "compressed pull reply for key ", key, " before its full-precision first reply");
    pull_decoder_(key, payload, replica);
  }
  std::copy(replica.begin(), replica.end(), out.begin());
}

comm::Ticket KVWorker::pull(int key, std::span<float> out, std::uint64_t min_version) {
  FERRY_CHECK_EQ(out.size(), layout_->key(key).length, "key ", key);
  if (pull_decoder_) {
    // The reply's size is not known in advance: receive it when the ticket is waited for.
    comm::Ticket request = send_request(key, Op::kPull, min_version, PayloadFormat::kFloat32, {});
    return comm::Ticket(std::async(std::launch::deferred, [this, key, out, request = std::move(request)]() mutable {
      request.wait();
      receive_compressed_pull(key, out);
    }));
  }
  std::vector<comm::Ticket> parts;
  parts.push_back(comm_->irecv(server_rank(key), comm::kTagPsReplyBase + key, std::as_writable_bytes(out)));
  parts.push_back(send_request(key, Op::kPull, min_version, PayloadFormat::kFloat32, {}));
  // Wait for the request before the reply: a deferred receive must not block the request.
  std::swap(parts[0], parts[1]);
  return comm::when_all(std::move(parts));
}

comm::Ticket KVWorker::push_all(std::span<const float> flat_grad) {
  std::vector<comm::Ticket> sends;
  for (const auto& k : layout_->keys()) sends.push_back(push(k.key, flat_grad.subspan(k.offset, k.length)));
  return comm::when_all(std::move(sends));
}

comm::Ticket KVWorker::pull_all(std::span<float> flat, std::uint64_t min_version) {
  std::vector<comm::Ticket> pulls;
  for (const auto& k : layout_->keys()) pulls.push_back(pull(k.key, flat.subspan(k.offset, k.length), min_version));
  return comm::when_all(std::move(pulls));
}

void KVWorker::checkpoint(std::uint64_t iterations) {
  for (int s = 0; s < layout_->num_servers(); ++s) {
    RequestHeader h{Op::kCheckpoint, -1, iterations, comm_->rank(), PayloadFormat::kFloat32};
    comm_->send(first_server_rank_ + s, comm::kTagPsRequest, make_request(h, {}));
  }
  for (int s = 0; s < layout_->num_servers(); ++s) {
    comm::Message m = comm_->recv(first_server_rank_ + s, comm::kTagPsCheckpointAck);
    std::uint64_t acked = 0;
    if (m.data.size() == sizeof acked) std::memcpy(&acked, m.data.data(), sizeof acked);
    FERRY_CHECK_EQ(acked, iterations, "checkpoint acknowledged by server rank ", m.src);
  }
}

void KVWorker::shutdown() {
  for (int s = 0; s < layout_->num_servers(); ++s) {
    RequestHeader h{Op::kShutdown, -1, 0, comm_->rank(), PayloadFormat::kFloat32};
    comm_->send(first_server_rank_ + s, comm::kTagPsRequest, make_request(h, {}));
  }
}

}  // namespace ferry::ps
