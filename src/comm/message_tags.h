// Every message tag ferry sends with, in one table: a new protocol takes its tags here, so no two
// subsystems (parameter server, training driver, collectives) can pick the same one, and the
// static_assert below proves that they are distinct. A tag identifies a message stream between
// a pair of ranks (messages of one tag between one pair arrive in order; communicator.h).
#pragma once

#include <array>

namespace ferry::comm {

// Tags in [0, kMaxUserTag] are for protocols above the communicator; the ones above it are the
// collectives' own (p2p_collectives.h). MPI guarantees tags up to at least 32767 (MPI_TAG_UB).
inline constexpr int kMaxUserTag = 9999;

// ---- parameter server (src/ps/protocol.h) ----
inline constexpr int kTagPsRequest = 1;        // worker -> server: a RequestHeader and its payload
inline constexpr int kTagPsCheckpointAck = 2;  // server -> worker: its checkpoint state is written
// server -> worker: the answer to a pull of key k is tagged kTagPsReplyBase + k, so a worker can
// receive each key straight into its buffer; the range runs to kMaxUserTag (ps::kMaxKeys keys).
inline constexpr int kTagPsReplyBase = 100;

// ---- training driver (src/train/run_training.cc and its parts) ----
inline constexpr int kTagTrainStats = 60;           // worker -> rank 0: its end-of-run WorkerStats
inline constexpr int kTagTrainCheckpointDone = 61;  // worker -> rank 0: my checkpoint state file is written
inline constexpr int kTagTrainJob = 62;  // worker 0 -> each server: the job a DistributedOptimizer runs (or none)

// ---- collectives over point-to-point messages (src/comm/p2p_collectives.cc) ----
inline constexpr int kTagAllreduce = kMaxUserTag + 1;
inline constexpr int kTagBroadcast = kMaxUserTag + 2;
inline constexpr int kTagAllgather = kMaxUserTag + 3;
inline constexpr int kTagBarrier = kMaxUserTag + 4;

namespace detail {
// Every single tag above (the reply range is checked separately).
inline constexpr std::array<int, 9> kSingleTags = {kTagPsRequest,  kTagPsCheckpointAck, kTagTrainStats,
                                                   kTagTrainCheckpointDone, kTagTrainJob, kTagAllreduce,
                                                   kTagBroadcast, kTagAllgather, kTagBarrier};
constexpr bool tags_are_distinct() {
  for (std::size_t i = 0; i < kSingleTags.size(); ++i) {
    if (kSingleTags[i] < 0) return false;
    if (kSingleTags[i] >= kTagPsReplyBase && kSingleTags[i] <= kMaxUserTag) return false;  // in the reply range
    for (std::size_t j = i + 1; j < kSingleTags.size(); ++j)
      if (kSingleTags[i] == kSingleTags[j]) return false;
  }
  return true;
}
}  // namespace detail

static_assert(detail::tags_are_distinct(),
              "two message tags collide (or one lies in the parameter server's reply range)");
static_assert(kTagBarrier <= 32767, "tags must stay within MPI's guaranteed MPI_TAG_UB");

}  // namespace ferry::comm
