#include "moe/store/host_pool.h"

#include <cstring>

#include <ATen/Parallel.h>

#include "moe/quant/quantize.h"

namespace ferry::moe {

std::pair<quant::QuantType, quant::QuantType> expert_formats_as_stored(const Checkpoint& ck) {
  const GgufModel* g = ck.gguf();
  if (g == nullptr) return {quant::QuantType::kF32, quant::QuantType::kF32};
  const MoeConfig& c = ck.config();
  TensorNames n(c);
  std::pair<quant::QuantType, quant::QuantType> formats;
  StoredTensor first[2];  // the first layer's gate and down, which every other must match
  for (int l = 0; l < c.num_moe_layers(); ++l)
    for (int which : {1, 3, 2}) {
      const StoredTensor t = g->stored(n.expert(c.decoder_layer(l), 0, which));
      StoredTensor& ref = first[which == 2 ? 1 : 0];
      if (ref.gguf_name.empty()) {
        ref = t;
        if (!quant::quant_type_computed(t.type))
          FERRY_THROW(InvalidArgument, "GGUF '", ck.dir(), "': tensor '", t.gguf_name, "' is stored in ",
                      quant::quant_name(t.type), ", which ferry's expert kernels do not compute on; pass --weights ",
                      "FORMAT (", quant::quant_type_names(), ") to convert the experts at load");
      } else if (t.type != ref.type) {
        FERRY_THROW(InvalidArgument, "GGUF '", ck.dir(), "': tensor '", t.gguf_name, "' is stored in ",
                    quant::quant_name(t.type), " but '", ref.gguf_name, "' in ", quant::quant_name(ref.type),
                    "; the host pool holds one format for gate and up and one for down in every layer: pass --weights ",
                    "FORMAT (", quant::quant_type_names(), ") to convert the experts at load");
      }
    }
  return {first[0].type, first[1].type};
}

std::unique_ptr<HostPool> HostPool::load(const Checkpoint& ck, bool with_data, std::optional<quant::QuantType> format) {
  const MoeConfig& c = ck.config();
  auto pool = std::make_unique<HostPool>();
  const std::int64_t H = c.hidden_size, I = c.intermediate_size;
  const auto [up_format, down_format] = format ? std::pair{*format, *format} : expert_formats_as_stored(ck);
  for (auto f : {up_format, down_format})
    for (std::int64_t row : {H, I})
      if (!quant::quant_row_fits(f, static_cast<std::size_t>(row)))
        FERRY_THROW(InvalidArgument, "experts in ", quant::quant_name(f), " need hidden_size and intermediate_size ",
                    "that are multiples of ", quant::quant_traits(f).block_elems, "; this model has ", H, " and ", I);
  pool->layout_ = {H, I, up_format, down_format};
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
        quant::QuantType format;
      } parts[3] = {{1, I, H, L.w1_offset(), L.format}, {3, I, H, L.w3_offset(), L.format},
                    {2, H, I, L.w2_offset(), L.down_format}};
      for (const auto& p : parts) {
        const std::string name = n.expert(d, e, p.which);
        if (ck.gguf()) {  // stored in the pool's format: the blocks as they are
          const StoredTensor t = ck.gguf()->stored(name);
          if (t.type == p.format) {
            scratch.resize(static_cast<std::size_t>(p.rows * p.cols));
            ck.read_f32(name, {p.rows, p.cols}, scratch.data());  // refuses NaN/Inf weights, as for any tensor
            std::memcpy(dst + p.offset, t.bytes.data(), t.bytes.size());
            continue;
          }
        }
        if (p.format == quant::QuantType::kF32) {
          ck.read_f32(name, {p.rows, p.cols}, reinterpret_cast<float*>(dst + p.offset));
          continue;
        }
        scratch.resize(static_cast<std::size_t>(p.rows * p.cols));
        ck.read_f32(name, {p.rows, p.cols}, scratch.data());
        quant::quantize_row(p.format, scratch.data(), dst + p.offset, scratch.size());
      }
      L.to_kernel_layout(dst);
    }
  });
  return pool;
}

}  // namespace ferry::moe
