#include "compress/topk_codec.h"

#include <algorithm>

#include "compress/sparse_payload.h"
#include "core/error.h"

namespace ferry::compress {

TopkOptions parse_topk_options(SpecReader& spec) {
  TopkOptions o;
  o.ratio = spec.get_double("ratio", o.ratio);
  return o;
}

TopkCodec::TopkCodec(TopkOptions options, TensorInfo info)
    : Codec(std::move(info)), options_(options) {
  FERRY_REQUIRE_IN(options_.ratio, 0, 1, "(]", "topk: ratio");
  require_sparse_numel(info_.numel, "topk");
  k_ = sparse_count(options_.ratio, info_.numel);
}

std::size_t TopkCodec::encoded_size_bytes() const { return sparse_size_bytes(k_); }

void TopkCodec::encode(std::span<const float> grad, std::vector<std::byte>& out) {
  check_numel(grad.size(), "gradient");
  selector_.select(grad, k_, idx_);
  write_sparse(out, CodecId::kTopk, grad.size(), idx_, grad.data());
}

void TopkCodec::encode_with_feedback(std::span<const float> grad, std::span<float> residual,
                                     std::vector<std::byte>& out, std::vector<float>&) {
  check_numel(grad.size(), "gradient");
  check_numel(residual.size(), "residual");
  float* e = residual.data();
  selector_.add_and_select(grad, residual, k_, idx_);  // e += g fused into the selection pass
  write_sparse(out, CodecId::kTopk, grad.size(), idx_, e);
  for (std::uint32_t i : idx_) e[i] = 0.0f;  // e - decode(payload): sent values are exact
}

void TopkCodec::decode(std::span<const std::byte> payload, std::span<float> out) const {
  check_numel(out.size(), "decode output");
  decode_sparse(payload, CodecId::kTopk, out, false);
}

void TopkCodec::decode_add(std::span<const std::byte> payload, std::span<float> acc) const {
  check_numel(acc.size(), "decode_add accumulator");
  decode_sparse(payload, CodecId::kTopk, acc, true);
}

}  // namespace ferry::compress
