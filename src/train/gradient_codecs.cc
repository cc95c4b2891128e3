#include "train/gradient_codecs.h"

#include <cstring>
#include <map>

#include "compress/codec_registry.h"
#include "compress/codec_spec.h"
#include "core/error.h"
#include "train/checkpoint.h"
#include "train/worker_momentum.h"

namespace ferry::train {

namespace {

// Checkpoints of codec state: one record "codec_state" holding u64 codec count, then per codec
// (key or tensor order) u64 length + Codec::save_state blob. With it every codec resumes bit
// for bit: residuals, random streams, step counters, PowerSGD's Q, DGC's momentum.
constexpr const char* kCodecStateRecord = "codec_state";

void save_codec_states(const std::vector<const compress::Codec*>& codecs, StateWriter& out) {
  std::vector<std::byte> blob, one;
  auto put_u64 = [&blob](std::uint64_t v) {
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    blob.insert(blob.end(), p, p + sizeof v);
  };
  put_u64(codecs.size());
  for (const auto* c : codecs) {
    one.clear();
    c->save_state(one);
    put_u64(one.size());
    blob.insert(blob.end(), one.begin(), one.end());
  }
  out.put_bytes(kCodecStateRecord, blob);
}

void load_codec_states(const std::vector<compress::Codec*>& codecs, const StateReader& in, const char* unit) {
  if (!in.has(kCodecStateRecord) && in.has("residuals"))
    FERRY_THROW(FormatError, "checkpoint file ", in.what(),
                " holds codec residuals only (written by an older ferry); it cannot resume the codecs exactly: "
                "start the run afresh or resume with the version that wrote it");
  const std::vector<std::byte> blob = in.bytes(kCodecStateRecord);
  std::size_t pos = 0;
  auto get_u64 = [&](const char* what) {
    std::uint64_t v = 0;
    if (blob.size() - pos < sizeof v)
      FERRY_THROW(FormatError, "checkpoint file ", in.what(), ": codec state truncated in ", what);
    std::memcpy(&v, blob.data() + pos, sizeof v);
    pos += sizeof v;
    return v;
  };
  const std::uint64_t count = get_u64("the codec count");
  if (count != codecs.size())
    FERRY_THROW(FormatError, "checkpoint file ", in.what(), " holds the state of ", count, " codecs, this run has ",
                codecs.size(), " (another model or --codec?)");
  for (std::size_t i = 0; i < codecs.size(); ++i) {
    const std::uint64_t len = get_u64("a codec's length");
    if (blob.size() - pos < len)
      FERRY_THROW(FormatError, "checkpoint file ", in.what(), ": codec state of ", unit, " ", i, " runs past the end");
    try {
      codecs[i]->load_state(std::span(blob).subspan(pos, len));
    } catch (const FormatError& e) {
      FERRY_THROW(FormatError, "checkpoint file ", in.what(), ", ", unit, " ", i, ": ", e.what());
    }
    pos += len;
  }
  if (pos != blob.size())
    FERRY_THROW(FormatError, "checkpoint file ", in.what(), ": ", blob.size() - pos, " trailing bytes of codec state");
}

}  // namespace

TensorShapes shapes_of(const std::vector<at::Tensor>& params) {
  TensorShapes shapes;
  for (const auto& p : params) shapes.emplace_back(p.sizes().begin(), p.sizes().end());
  return shapes;
}

TensorShapes shapes_of(const FlatParams& params) {
  TensorShapes shapes;
  for (std::size_t i = 0; i < params.num_params(); ++i)
    shapes.emplace_back(params.param(i).sizes().begin(), params.param(i).sizes().end());
  return shapes;
}

bool is_uncompressed(const std::string& codec_spec) {
  static const std::string kNone = compress::canonical_codec_spec("none");  // "none:ef=0"
  return codec_spec.empty() || compress::canonical_codec_spec(codec_spec) == kNone;
}

compress::TensorInfo key_tensor_info(const ps::KeyLayout& layout, int key, const TensorShapes& shapes, int rank,
                                     std::int64_t batch) {
  const ps::KeyRange& k = layout.key(key);
  compress::TensorInfo info{k.length, {}, static_cast<std::uint64_t>(key), rank, batch};
  if (k.tensor < static_cast<int>(shapes.size())) {
    const auto& shape = shapes[k.tensor];
    std::size_t numel = 1;
    for (auto d : shape) numel *= static_cast<std::size_t>(d);
    if (numel == k.length) {  // the key is the whole tensor
      info.param_ndim = shape.size();
      if (shape.size() >= 2) info.shape = shape;
    }
  }
  return info;
}

KeyPushCodecs::KeyPushCodecs(const std::string& codec_spec, const ps::KeyLayout& layout, const TensorShapes& shapes,
                             int rank, std::int64_t batch)
    : layout_(&layout) {
  for (const auto& k : layout.keys())
    codecs_.push_back(compress::make_codec(codec_spec, key_tensor_info(layout, k.key, shapes, rank, batch)));
}

comm::Ticket KeyPushCodecs::push_all(ps::KVWorker& kv, std::span<const float> flat_grad, WorkerMomentum* momentum) {
  FERRY_CHECK_EQ(flat_grad.size(), layout_->total_elements());
  std::vector<comm::Ticket> sends;
  for (const auto& k : layout_->keys()) {
    std::vector<std::byte> payload;
    codecs_[k.key]->encode(flat_grad.subspan(k.offset, k.length), payload);
    if (momentum) momentum->mask(k.offset, k.length, payload);
    sends.push_back(kv.push_encoded(k.key, std::move(payload)));
  }
  return comm::when_all(std::move(sends));
}

ps::PayloadDecoder make_key_decoder(const std::string& codec_spec, const ps::KeyLayout& layout,
                                    const TensorShapes& shapes, const std::vector<int>& keys) {
  // Shared by the copies std::function may make; never mutated after construction.
  auto codecs = std::make_shared<std::map<int, std::unique_ptr<compress::Codec>>>();
  for (int key : keys) (*codecs)[key] = compress::make_codec(codec_spec, key_tensor_info(layout, key, shapes, /*rank=*/0));
  return [codecs](int key, std::span<const std::byte> payload, std::span<float> acc) {
    auto it = codecs->find(key);
    if (it == codecs->end()) FERRY_THROW(FormatError, "payload for key ", key, ", which has no codec here");
    it->second->decode_add(payload, acc);
  };
}

ps::PushDecoder make_push_decoder(const std::string& codec_spec, const ps::KeyLayout& layout,
                                  const TensorShapes& shapes, int server_index) {
  return make_key_decoder(codec_spec, layout, shapes, layout.keys_of_server(server_index));
}

std::string pull_codec_spec(const std::string& codec_spec) {
  compress::CodecSpec spec = compress::CodecSpec::parse(codec_spec, "codec");
  const compress::CodecRegistry& codecs = compress::builtin_codec_registry();
  const compress::CodecEntry& entry = codecs.at(spec.name);
  if (!entry.pull_unsupported.empty()) {
    std::string usable;
    for (const auto& e : codecs.entries())
      if (e.pull_unsupported.empty() && !e.identity) usable += (usable.empty() ? "" : ", ") + e.name;
    FERRY_THROW(InvalidArgument, "--compress-pull: codec '", spec.name, "' is for gradients only (",
                entry.pull_unsupported, "); use one of ", usable);
  }
  FERRY_REQUIRE(!entry.identity, "--compress-pull needs a codec (e.g. --compress-pull=fp16 or a --codec)");
  std::erase_if(spec.params, [](const auto& kv) { return kv.first == "ef"; });
  std::string text = spec.name + ":";
  for (const auto& [k, v] : spec.params) text += k + "=" + v + ",";
  return compress::canonical_codec_spec(text + "ef=1");
}

ps::PullEncoder make_pull_encoder(const std::string& pull_spec, const ps::KeyLayout& layout, const TensorShapes& shapes,
                                  int server_index) {
  // Codec state (error feedback) is per (key, worker): created at a worker's first compressed pull.
  auto codecs = std::make_shared<std::map<std::pair<int, int>, std::unique_ptr<compress::Codec>>>();
  const ps::KeyLayout* l = &layout;
  return [codecs, pull_spec, l, shapes, server_index](int key, int worker, std::span<const float> change,
                                                      std::vector<std::byte>& payload) {
    FERRY_CHECK_EQ(l->key(key).server, server_index, "server of key ", key);
    auto& codec = (*codecs)[{key, worker}];
    if (!codec) codec = compress::make_codec(pull_spec, key_tensor_info(*l, key, shapes, worker));
    codec->encode(change, payload);
  };
}

TensorAllreduceCodecs::TensorAllreduceCodecs(const std::string& codec_spec, const FlatParams& params, int rank,
                                             std::int64_t batch) {
  const TensorShapes shapes = shapes_of(params);
  for (std::size_t i = 0; i < params.num_params(); ++i) {
    compress::TensorInfo info{params.numels()[i], {}, static_cast<std::uint64_t>(i), rank, batch};
    if (shapes[i].size() >= 2) info.shape = shapes[i];
    info.param_ndim = shapes[i].size();
    tensors_.push_back(Tensor{params.offset(i), params.numels()[i], compress::make_codec(codec_spec, info)});
  }
}

void TensorAllreduceCodecs::allreduce_sum(comm::Communicator& comm, std::span<float> flat_grads,
                                          WorkerMomentum* momentum) {
  allreduce_sum(comm, flat_grads, momentum, 0, tensors_.size());
}

void TensorAllreduceCodecs::allreduce_sum(comm::Communicator& comm, std::span<float> flat_grads,
                                          WorkerMomentum* momentum, std::size_t first_tensor, std::size_t end_tensor) {
  FERRY_CHECK(first_tensor <= end_tensor && end_tensor <= tensors_.size(), "tensors [", first_tensor, ", ",
              end_tensor, ") of ", tensors_.size());
  bucket_.clear();
  for (std::size_t i = first_tensor; i < end_tensor; ++i) {
    Tensor& t = tensors_[i];
    bucket_.push_back(BucketTensor{t.codec.get(), flat_grads.subspan(t.offset, t.numel), t.offset});
  }
  exchange_.sum(collectives_of(comm), bucket_, momentum);
}

}  // namespace ferry::train

namespace ferry::train {

void KeyPushCodecs::save_state(StateWriter& out) const {
  std::vector<const compress::Codec*> c;
  for (const auto& p : codecs_) c.push_back(p.get());
  save_codec_states(c, out);
}

void KeyPushCodecs::load_state(const StateReader& in) {
  std::vector<compress::Codec*> c;
  for (const auto& p : codecs_) c.push_back(p.get());
  load_codec_states(c, in, "key");
}

void TensorAllreduceCodecs::save_state(StateWriter& out) const {
  std::vector<const compress::Codec*> c;
  for (const auto& t : tensors_) c.push_back(t.codec.get());
  save_codec_states(c, out);
}

void TensorAllreduceCodecs::load_state(const StateReader& in) {
  std::vector<compress::Codec*> c;
  for (const auto& t : tensors_) c.push_back(t.codec.get());
  load_codec_states(c, in, "tensor");
}

}  // namespace ferry::train
