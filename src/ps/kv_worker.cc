#include "ps/kv_worker.h"

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
  return comm_->isend(server_rank(key), kTagRequest, make_request(h, payload));
}

void KVWorker::init(std::span<const float> flat) {
  FERRY_CHECK(flat.size() == layout_->total_elements());
  std::vector<comm::Ticket> sends;
  for (const auto& k : layout_->keys())
    sends.push_back(send_request(k.key, Op::kInit, 0, PayloadFormat::kFloat32,
                                 std::as_bytes(flat.subspan(k.offset, k.length))));
  for (auto& t : sends) t.wait();
}

comm::Ticket KVWorker::push(int key, std::span<const float> grad) {
  FERRY_CHECK(grad.size() == layout_->key(key).length, "key ", key);
  return send_request(key, Op::kPush, 0, PayloadFormat::kFloat32, std::as_bytes(grad));
}

comm::Ticket KVWorker::push_encoded(int key, std::vector<std::byte> payload) {
  return send_request(key, Op::kPush, 0, PayloadFormat::kCodec, payload);
}

comm::Ticket KVWorker::pull(int key, std::span<float> out, std::uint64_t min_version) {
  FERRY_CHECK(out.size() == layout_->key(key).length, "key ", key);
  std::vector<comm::Ticket> parts;
  parts.push_back(comm_->irecv(server_rank(key), kTagReplyBase + key, std::as_writable_bytes(out)));
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

void KVWorker::shutdown() {
  for (int s = 0; s < layout_->num_servers(); ++s) {
    RequestHeader h{Op::kShutdown, -1, 0, comm_->rank(), PayloadFormat::kFloat32};
    comm_->send(first_server_rank_ + s, kTagRequest, make_request(h, {}));
  }
}

}  // namespace ferry::ps
