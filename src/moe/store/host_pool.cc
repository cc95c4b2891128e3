#include "moe/store/host_pool.h"

#include <ATen/Parallel.h>

#include "moe/quant/quantize.h"

namespace ferry::moe {

std::unique_ptr<HostPool> HostPool::load(const Checkpoint& ck, bool with_data, quant::QuantType format) {
  const MoeConfig& c = ck.config();
  auto pool = std::make_unique<HostPool>();
  const std::int64_t H = c.hidden_size, I = c.intermediate_size;
  for (std::int64_t row : {H, I})
    if (!quant::quant_row_fits(format, static_cast<std::size_t>(row)))
      FERRY_THROW(InvalidArgument, "experts in ", quant::quant_name(format), " need hidden_size and intermediate_size ",
                  "that are multiples of ", quant::quant_traits(format).block_elems, "; this model has ", H, " and ", I);
  pool->layout_ = {H, I, format};
  pool->num_layers_ = c.num_moe_layers();  // MoE layers: a dense layer has no experts
  pool->num_experts_ = c.num_experts;
  TensorNames n(c);
  // Every expert tensor's shape first: a config whose sizes the files do not hold fails here,
  // naming the tensor, instead of in allocating a pool of the config's size.
  for (int l = 0; l < c.num_moe_layers(); ++l)
    for (int e = 0; e < c.num_experts; ++e) {
      const int d = c.decoder_layer(l);
      ck.expect(n.expert(d, e, 1), {I, H});
      ck.expect(n.expert(d, e, 3), {I, H});
      ck.expect(n.expert(d, e, 2), {H, I});
    }
  if (!with_data) return pool;
  const ExpertLayout& L = pool->layout_;
  pool->data_.resize(static_cast<std::size_t>(pool->total_bytes()));
  const std::int64_t count = static_cast<std::int64_t>(c.num_moe_layers()) * c.num_experts;
  // Experts in parallel: quantizing to the K-quants costs more than reading.
  at::parallel_for(0, count, 1, [&](std::int64_t begin, std::int64_t end) {
    std::vector<float> scratch;
    for (std::int64_t k = begin; k < end; ++k) {
      const int l = static_cast<int>(k / c.num_experts), e = static_cast<int>(k % c.num_experts);
      auto* dst = const_cast<std::byte*>(pool->expert({l, e}));
      const int d = c.decoder_layer(l);
      const struct {
        int which;
        std::int64_t rows, cols;
        std::uint64_t offset;
      } parts[3] = {{1, I, H, L.w1_offset()}, {3, I, H, L.w3_offset()}, {2, H, I, L.w2_offset()}};
      for (const auto& p : parts) {
        if (format == quant::QuantType::kF32) {
          ck.read_f32(n.expert(d, e, p.which), {p.rows, p.cols}, reinterpret_cast<float*>(dst + p.offset));
          continue;
        }
        scratch.resize(static_cast<std::size_t>(p.rows * p.cols));
        ck.read_f32(n.expert(d, e, p.which), {p.rows, p.cols}, scratch.data());
        quant::quantize_row(format, scratch.data(), dst + p.offset, scratch.size());
      }
    }
  });
  return pool;
}

}  // namespace ferry::moe
