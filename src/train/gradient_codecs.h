// Gradient compression inside the training strategies (`ferry train --codec SPEC`): the
// per-tensor codec bookkeeping, so that a strategy only asks "push these gradients" or "sum
// these gradients over workers".
//
//   parameter server: every worker keeps one codec per key (a piece of one tensor, see
//     ps::KeyLayout), encodes its slice of the gradient and pushes the packed payload; each
//     server keeps one codec per key it owns and decode-adds every worker's payload into the
//     round sum (sync) or applies it (async). Pulls stay fp32 (as in MXNet).
//   allreduce: one codec per model tensor, the whole model one bucket of the exchange the DDP
//     hook uses too (bucket_exchange.h): codecs with their own scheme (PowerSGD: allreduce P and
//     Q) run it tensor by tensor; every other tensor's payload is packed, length prefixed
//     (compress/payload_records.h), into one buffer, allgathered once per step, and each worker
//     decode-adds all workers' payloads into a zeroed gradient.
// Either way the result is the SUM over workers of the decoded gradients, as with plain fp32.
// The spec "none" means no codec at all: strategies keep their raw fp32 path (no headers).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "compress/codec.h"
#include "ps/key_layout.h"
#include "ps/kv_server.h"
#include "ps/kv_worker.h"
#include "train/bucket_exchange.h"
#include "train/flat_params.h"

namespace ferry::train {

class StateReader;  // train/checkpoint.h
class StateWriter;
class WorkerMomentum;  // train/worker_momentum.h

// Shape of every model tensor, in model order.
using TensorShapes = std::vector<std::vector<std::int64_t>>;

TensorShapes shapes_of(const FlatParams& params);
TensorShapes shapes_of(const std::vector<at::Tensor>& params);

// True for the canonical spec of the identity codec: the strategies then use raw fp32.
bool is_uncompressed(const std::string& codec_spec);

// What the codec of one key knows: a key covering a whole tensor keeps the tensor's shape
// (PowerSGD needs rows × cols); a piece of a tensor split across servers is 1-D. `shapes`
// empty = every key 1-D. tensor_id = key id, the same on every worker and on the server.
// `batch`: the per-worker batch the gradients are means over (twobit units=mxnet), 0 = unknown.
compress::TensorInfo key_tensor_info(const ps::KeyLayout& layout, int key, const TensorShapes& shapes, int rank,
                                     std::int64_t batch = 0);

// Worker side of the parameter server: one codec per key.
class KeyPushCodecs {
 public:
  // `layout` must outlive this object (it is the KVWorker's).
  KeyPushCodecs(const std::string& codec_spec, const ps::KeyLayout& layout, const TensorShapes& shapes, int rank,
                std::int64_t batch = 0);
  // Encodes every key's slice of flat_grad and pushes it with push_encoded; one ticket for all.
  // With `momentum` (worker_momentum.h) each key's sent coordinates are masked in its velocity.
  comm::Ticket push_all(ps::KVWorker& kv, std::span<const float> flat_grad, WorkerMomentum* momentum = nullptr);
  // Checkpoints: every key's codec state (Codec::save_state), as the record "codec_state".
  void save_state(StateWriter& out) const;
  // FormatError naming the file and the key when the record is missing (a checkpoint of an
  // older version), belongs to other codecs or keys, or is malformed.
  void load_state(const StateReader& in);

 private:
  const ps::KeyLayout* layout_;  // see constructor
  std::vector<std::unique_ptr<compress::Codec>> codecs_;  // by key id
};

// Server side: a PushDecoder that owns one codec per key of server `server_index` (decode_add
// is const, so one instance serves all workers' payloads). A key it does not own is a
// FormatError.
ps::PushDecoder make_push_decoder(const std::string& codec_spec, const ps::KeyLayout& layout,
                                  const TensorShapes& shapes, int server_index);

// Compressed pulls (--compress-pull SPEC): the server encodes, per key and worker, the change
// of the weights since that worker's previous pull, with error feedback forced on (what a codec
// drops now is sent with a later pull); the worker decodes into its replica. The returned spec
// is canonical with ef=1; codecs whose aggregation is not per-payload (powersgd) are refused.
std::string pull_codec_spec(const std::string& codec_spec);
// Server side: one codec per (key of server `server_index`, worker).
ps::PullEncoder make_pull_encoder(const std::string& pull_spec, const ps::KeyLayout& layout, const TensorShapes& shapes,
                                  int server_index);
// Decodes payloads of the given keys (decode is stateless: one codec per key).
ps::PayloadDecoder make_key_decoder(const std::string& codec_spec, const ps::KeyLayout& layout,
                                    const TensorShapes& shapes, const std::vector<int>& keys);

// Allreduce side: one codec per model tensor.
class TensorAllreduceCodecs {
 public:
  TensorAllreduceCodecs(const std::string& codec_spec, const FlatParams& params, int rank, std::int64_t batch = 0);
  // flat_grads holds this worker's gradient on entry and the SUM over the `comm` ranks of the
  // decoded gradients on return. Collective: every rank calls it with the same spec. With
  // `momentum`, each tensor's sent coordinates are masked in the worker's velocity.
  void allreduce_sum(comm::Communicator& comm, std::span<float> flat_grads, WorkerMomentum* momentum = nullptr);
  // The same for the model tensors [first_tensor, end_tensor) only (flat_grads is still the whole
  // flat vector; the others are left alone): a fragment of the model (Streaming DiLoCo).
  void allreduce_sum(comm::Communicator& comm, std::span<float> flat_grads, WorkerMomentum* momentum,
                     std::size_t first_tensor, std::size_t end_tensor);
  // Checkpoints: every tensor's codec state, as KeyPushCodecs does per key.
  void save_state(StateWriter& out) const;
  void load_state(const StateReader& in);

 private:
  struct Tensor {
    std::size_t offset = 0;
    std::size_t numel = 0;
    std::unique_ptr<compress::Codec> codec;
  };
  std::vector<Tensor> tensors_;
  std::vector<BucketTensor> bucket_;  // the tensors of one exchange, reused
  BucketExchange exchange_;
};

}  // namespace ferry::train
