#include "ps/kv_server.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "core/finite.h"

namespace ferry::ps {

// One sync round of a key. Pushes are folded into `sum` in worker order 0, 1, ..., N-1 whatever
// order they arrive in (an early push waits in `parked`), so the sum - and the run - is the same
// bit for bit on every execution; memory beyond one sum is used only for out-of-order arrivals.
// A round with a skip push (a worker whose gradient was not finite) or whose sum is not finite
// applies no update: weights and optimizer state stay as they were, the version still advances.
struct Round {
  std::vector<float> sum;
  int next = 0;                                    // workers folded so far
  std::map<int, std::vector<float>> parked;        // worker -> its decoded push, arrived early
                                                   // (empty: a skip push)
  bool skip = false;                               // a worker sent a skip push
};

struct KVServer::KeyState {
  const KeyRange* range = nullptr;
  std::vector<float> weights;
  std::unique_ptr<SgdOptimizer> optimizer;
  bool initialized = false;
  std::uint64_t version = 0;                     // optimizer steps applied
  std::vector<std::uint64_t> pushes;             // sync: pushes received per worker
  std::map<std::uint64_t, Round> rounds;          // sync: rounds not yet applied
  std::vector<std::pair<int, std::uint64_t>> waiting_pulls;  // (worker rank, least version)
  std::map<int, std::vector<float>> last_pulled;  // compressed pulls: worker rank -> weights at its last pull
};

KVServer::KVServer(comm::Communicator* comm, const KeyLayout* layout, int server_index, ServerOptions options)
    : comm_(comm), layout_(layout), server_index_(server_index), options_(std::move(options)) {
  FERRY_REQUIRE(options_.num_workers >= 1, "server needs at least one worker");
  FERRY_REQUIRE(static_cast<int>(layout_->keys().size()) <= kMaxKeys, "model has ", layout_->keys().size(),
                " keys; at most ", kMaxKeys, " are supported");
  // An integrating optimizer (EF21) sums one mean of every worker's increments per round; applied
  // on each push's arrival it would step with the whole estimate once per worker.
  FERRY_REQUIRE(!options_.sgd.integrate || options_.mode == ServerMode::kSync,
                "an integrating optimizer (EF21) needs a synchronous server");
  if (options_.average_pushes) options_.sgd.rescale = 1.0f / options_.num_workers;
  for (int key : layout_->keys_of_server(server_index)) {
    auto k = std::make_unique<KeyState>();
    k->range = &layout_->key(key);
    k->weights.assign(k->range->length, 0.0f);
    k->optimizer = std::make_unique<SgdOptimizer>(k->range->length, options_.sgd);
    k->pushes.assign(options_.num_workers, 0);
    keys_[key] = std::move(k);
  }
}

KVServer::KeyState& KVServer::state(int key, int from_rank) {
  auto it = keys_.find(key);
  if (it == keys_.end())
    FERRY_THROW(FormatError, "server ", server_index_, " got a request for key ", key, " from rank ", from_rank,
                ", which it does not own");
  return *it->second;
}

void KVServer::run() {
  int active = options_.num_workers;
  while (active > 0) {
    comm::Message m = comm_->recv(comm::kAnySource, comm::kTagPsRequest);
    RequestHeader h = parse_header(m);
    switch (h.op) {
      case Op::kInit: on_init(m.src, h.key, payload_of(m)); break;
      case Op::kPush: on_push(m.src, h.key, h, payload_of(m)); break;
      case Op::kPull: on_pull(m.src, h.key, h.version); break;
      case Op::kShutdown: --active; break;
      case Op::kCheckpoint: on_checkpoint(m.src, h.version); break;
      default: FERRY_THROW(FormatError, "unknown request op ", static_cast<int>(h.op), " from rank ", m.src);
    }
    while (!replies_.empty() && replies_.front().done()) replies_.pop_front();
  }
  for (auto& t : replies_) t.wait();
  replies_.clear();
}

namespace {
void copy_floats(std::span<const std::byte> payload, std::span<float> out, int key, int src) {
  if (payload.size() != out.size_bytes())
    FERRY_THROW(FormatError, "key ", key, " from rank ", src, ": payload of ", payload.size(), " bytes, expected ",
                out.size_bytes());
  std::memcpy(out.data(), payload.data(), payload.size());
}
void add_floats(std::span<const std::byte> payload, std::span<float> acc, int key, int src) {
  if (payload.size() != acc.size_bytes())
    FERRY_THROW(FormatError, "key ", key, " from rank ", src, ": payload of ", payload.size(), " bytes, expected ",
                acc.size_bytes());
  const float* g = reinterpret_cast<const float*>(payload.data());
  for (std::size_t i = 0; i < acc.size(); ++i) acc[i] += g[i];
}
}  // namespace

void KVServer::on_init(int worker, int key, std::span<const std::byte> payload) {
  KeyState& k = state(key, worker);
  if (!restored_) copy_floats(payload, k.weights, key, worker);
  k.initialized = true;
  answer_pulls(k);
}

void KVServer::on_push(int worker, int key, const RequestHeader& h, std::span<const std::byte> payload) {
  KeyState& k = state(key, worker);
  FERRY_REQUIRE(k.initialized, "worker rank ", worker, " pushed key ", key, " before it was initialised");
  const bool skip = h.format == PayloadFormat::kSkip;
  if (skip && !payload.empty())
    FERRY_THROW(FormatError, "skip push for key ", key, " from rank ", worker, " carries ", payload.size(), " bytes");
  auto add = [&](std::span<float> acc) {
    if (h.format == PayloadFormat::kFloat32) {
      add_floats(payload, acc, key, worker);
    } else {
      FERRY_CHECK(options_.decoder, "codec payload but the server has no decoder");
      options_.decoder(key, payload, acc);
    }
  };
  if (options_.mode == ServerMode::kAsync) {
    std::vector<float> g;
    if (!skip) {
      g.assign(k.range->length, 0.0f);
      add(g);
    }
    if (!skip && all_finite(g)) k.optimizer->step(k.weights, g);
    ++k.version;
    answer_pulls(k);
    return;
  }
  int w = worker - options_.first_worker_rank;
  FERRY_CHECK(w >= 0 && w < options_.num_workers, "push from rank ", worker, " which is not a worker");
  std::uint64_t round = k.pushes[w]++;
  Round& r = k.rounds[round];
  if (r.sum.empty()) r.sum.assign(k.range->length, 0.0f);
  r.skip = r.skip || skip;
  if (w != r.next) {
    std::vector<float> g;
    if (!skip) {
      g.assign(k.range->length, 0.0f);
      add(g);
    }
    r.parked.emplace(w, std::move(g));
  } else {
    if (!skip) add(r.sum);
    ++r.next;
    for (auto it = r.parked.find(r.next); it != r.parked.end(); it = r.parked.find(r.next)) {
      for (std::size_t i = 0; i < it->second.size(); ++i) r.sum[i] += it->second[i];
      r.parked.erase(it);
      ++r.next;
    }
  }
  apply_ready_rounds(k);
}

void KVServer::apply_ready_rounds(KeyState& k) {
  // Rounds complete in order: round r is applied as the (r+1)-th update.
  for (;;) {
    auto it = k.rounds.find(k.version);
    if (it == k.rounds.end() || it->second.next < options_.num_workers) break;
    if (!it->second.skip && all_finite(it->second.sum)) k.optimizer->step(k.weights, it->second.sum);
    k.rounds.erase(it);
    ++k.version;
  }
  answer_pulls(k);
}

void KVServer::on_pull(int worker, int key, std::uint64_t min_version) {
  KeyState& k = state(key, worker);
  k.waiting_pulls.emplace_back(worker, min_version);
  answer_pulls(k);
}

void KVServer::answer_pulls(KeyState& k) {
  if (!k.initialized) return;
  auto ready = [&](const std::pair<int, std::uint64_t>& p) { return p.second <= k.version; };
  for (const auto& p : k.waiting_pulls)
    if (ready(p)) reply(k, p.first);
  std::erase_if(k.waiting_pulls, ready);
}

void KVServer::reply(KeyState& k, int worker) {
  const int tag = comm::kTagPsReplyBase + k.range->key;
  if (!options_.pull_encoder) {
    auto bytes = std::as_bytes(std::span<const float>(k.weights));
    replies_.push_back(comm_->isend(worker, tag, std::vector<std::byte>(bytes.begin(), bytes.end())));
    return;
  }
  std::vector<float>& last = k.last_pulled[worker];
  PayloadFormat format = PayloadFormat::kFloat32;
  std::vector<std::byte> payload;
  if (last.empty()) {
    auto bytes = std::as_bytes(std::span<const float>(k.weights));
    payload.assign(bytes.begin(), bytes.end());
  } else {
    std::vector<float> change(k.weights.size());
    for (std::size_t i = 0; i < change.size(); ++i) change[i] = k.weights[i] - last[i];
    options_.pull_encoder(k.range->key, worker, change, payload);
    format = PayloadFormat::kCodec;
  }
  last = k.weights;
  std::vector<std::byte> message(sizeof format + payload.size());
  std::memcpy(message.data(), &format, sizeof format);
  if (!payload.empty()) std::memcpy(message.data() + sizeof format, payload.data(), payload.size());
  replies_.push_back(comm_->isend(worker, tag, std::move(message)));
}

void KVServer::on_checkpoint(int worker, std::uint64_t iterations) {
  std::vector<int>& seen = checkpoint_markers_[iterations];
  seen.push_back(worker);
  if (static_cast<int>(seen.size()) < options_.num_workers) return;
  if (options_.on_checkpoint) options_.on_checkpoint(iterations, *this);
  const std::vector<int> workers = std::move(seen);
  checkpoint_markers_.erase(iterations);
  for (int w : workers) {
    auto bytes = std::as_bytes(std::span(&iterations, 1));
    replies_.push_back(comm_->isend(w, comm::kTagPsCheckpointAck, std::vector<std::byte>(bytes.begin(), bytes.end())));
  }
}

std::vector<KeySnapshot> KVServer::snapshot() const {
  std::vector<KeySnapshot> out;
  for (const auto& [key, k] : keys_) {
    FERRY_CHECK(k->rounds.empty(), "server ", server_index_, " key ", key,
                ": a checkpoint while a sync round is half-summed");
    auto v = k->optimizer->velocity();
    out.push_back(KeySnapshot{key, k->version, k->weights, std::vector<float>(v.begin(), v.end())});
  }
  return out;
}

void KVServer::restore(const std::vector<KeySnapshot>& snapshot) {
  FERRY_REQUIRE(snapshot.size() == keys_.size(), "checkpoint of server ", server_index_, " holds ", snapshot.size(),
                " keys, the server owns ", keys_.size());
  for (const KeySnapshot& s : snapshot) {
    auto it = keys_.find(s.key);
    if (it == keys_.end())
      FERRY_THROW(FormatError, "checkpoint of server ", server_index_, " holds key ", s.key, ", which it does not own");
    KeyState& k = *it->second;
    auto velocity = k.optimizer->mutable_velocity();
    if (s.weights.size() != k.weights.size() || s.velocity.size() != velocity.size())
      FERRY_THROW(FormatError, "checkpoint of server ", server_index_, " key ", s.key, ": ", s.weights.size(),
                  " weights, expected ", k.weights.size());
    k.weights = s.weights;
    std::copy(s.velocity.begin(), s.velocity.end(), velocity.begin());
    k.version = s.version;
    // Sync mode: round r of every worker is the (r+1)-th update.
    if (options_.mode == ServerMode::kSync) std::fill(k.pushes.begin(), k.pushes.end(), s.version);
    k.initialized = true;
  }
  restored_ = true;
}

KVServer::~KVServer() = default;

std::span<const float> KVServer::weights(int key) const { return keys_.at(key)->weights; }
std::uint64_t KVServer::version(int key) const { return keys_.at(key)->version; }

}  // namespace ferry::ps
