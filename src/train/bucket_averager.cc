#include "train/bucket_averager.h"

#include <utility>

#include "compress/codec_registry.h"
#include "core/error.h"

namespace ferry::train {

BucketAverager::BucketAverager(std::string codec_spec) : spec_(std::move(codec_spec)) {}

compress::Codec* BucketAverager::codec_of(std::uintptr_t key, const std::vector<std::int64_t>& shape, int rank) {
  auto& codec = codecs_[key];
  if (!codec) {
    std::size_t numel = 1;
    for (std::int64_t d : shape) numel *= static_cast<std::size_t>(d);
    const compress::TensorInfo info{numel, shape, codecs_.size() - 1, rank, /*batch=*/0, shape.size()};
    codec = compress::make_codec(spec_, info);
  }
  return codec.get();
}

void BucketAverager::average(const BucketCollectives& net, std::span<compress::Codec* const> codecs,
                             std::span<float> flat) {
  bucket_.clear();
  std::size_t offset = 0;
  for (compress::Codec* codec : codecs) {
    const std::size_t numel = codec->info().numel;
    FERRY_CHECK(offset + numel <= flat.size(), "a bucket of ", flat.size(), " elements is too small for its tensors");
    bucket_.push_back(BucketTensor{codec, flat.subspan(offset, numel), offset});
    offset += numel;
  }
  FERRY_CHECK_EQ(offset, flat.size(), "elements of the bucket's tensors");
  exchange_.sum(net, bucket_);
  const float world = static_cast<float>(net.world_size);
  for (float& x : flat) x /= world;
}

}  // namespace ferry::train
