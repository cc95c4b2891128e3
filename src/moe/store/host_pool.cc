#include "moe/store/host_pool.h"

#include <ATen/Parallel.h>

#include "moe/quant/quantize.h"

namespace ferry::moe {

ExpertLayout expert_layout_as_stored(const Checkpoint& ck) {
  const MoeConfig& c = ck.config();
  const std::int64_t H = c.hidden_size, I = c.intermediate_size;
  const GgufModel* g = ck.gguf();
  if (g == nullptr) return {H, I, c.mxfp4_experts ? quant::QuantType::kMXFP4 : quant::QuantType::kF32};
  TensorNames n(c);
  StoredTensor up;                  // the first layer's gate, which every gate and up must match
  std::vector<StoredTensor> downs;  // each layer's down
  for (int l = 0; l < c.num_moe_layers(); ++l)
    for (int which : {1, 3, 2}) {
      const StoredTensor t = g->stored(n.expert(c.decoder_layer(l), 0, which));
      if (!quant::quant_type_computed(t.type))
        FERRY_THROW(InvalidArgument, "GGUF '", ck.dir(), "': tensor '", t.gguf_name, "' is stored in ",
                    quant::quant_name(t.type), ", which ferry's expert kernels do not compute on; pass --weights ",
                    "FORMAT (", quant::quant_type_names(), ") to convert the experts at load");
      if (which == 2) {
        downs.push_back(t);
      } else if (up.gguf_name.empty()) {
        up = t;
      } else if (t.type != up.type) {
        FERRY_THROW(InvalidArgument, "GGUF '", ck.dir(), "': tensor '", t.gguf_name, "' is stored in ",
                    quant::quant_name(t.type), " but '", up.gguf_name, "' in ", quant::quant_name(up.type),
                    "; the host pool holds one format for gate and up in every layer: pass --weights ",
                    "FORMAT (", quant::quant_type_names(), ") to convert the experts at load");
      }
    }
  ExpertLayout L{H, I, up.type, downs.front().type};
  for (const auto& d : downs) {
    if (quant::quant_traits(d.type).block_bytes * quant::quant_traits(L.down_format).block_elems >
        quant::quant_traits(L.down_format).block_bytes * quant::quant_traits(d.type).block_elems)
      L.down_format = d.type;  // the widest sizes the slots
  }
  bool mixed = false;
  for (const auto& d : downs) mixed = mixed || d.type != downs.front().type;
  if (mixed)
    for (const auto& d : downs) L.layer_down.push_back(d.type);
  return L;
}

std::unique_ptr<HostPool> HostPool::load(const Checkpoint& ck, bool with_data, std::optional<quant::QuantType> format) {
  const MoeConfig& c = ck.config();
  auto pool = std::make_unique<HostPool>();
  const std::int64_t H = c.hidden_size, I = c.intermediate_size;
  pool->layout_ = format ? ExpertLayout{H, I, *format} : expert_layout_as_stored(ck);
  std::vector<quant::QuantType> formats = pool->layout_.layer_down;
  formats.push_back(pool->layout_.format);
  formats.push_back(pool->layout_.down_format);
  for (auto f : formats)
    for (std::int64_t row : {H, I})
      if (!quant::quant_row_fits(f, static_cast<std::size_t>(row)))
        FERRY_THROW(InvalidArgument, "experts in ", quant::quant_name(f), " need hidden_size and intermediate_size ",
                    "that are multiples of ", quant::quant_traits(f).block_elems, "; this model has ", H, " and ", I);
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
  const ExpertLayout& slot = pool->layout_;
  pool->data_.resize(static_cast<std::size_t>(pool->total_bytes()));
  const std::int64_t count = static_cast<std::int64_t>(c.num_moe_layers()) * c.num_experts;
  // Experts in parallel: quantizing to the K-quants costs more than reading.
  at::parallel_for(0, count, 1, [&](std::int64_t begin, std::int64_t end) {
    std::vector<float> scratch;
    for (std::int64_t k = begin; k < end; ++k) {
      const int l = static_cast<int>(k / c.num_experts), e = static_cast<int>(k % c.num_experts);
      auto* dst = const_cast<std::byte*>(pool->expert({l, e}));
      const int d = c.decoder_layer(l);
      const ExpertLayout L = slot.of_layer(l);  // this layer's formats
      const struct {
        int which;
        std::int64_t rows, cols;
        std::uint64_t offset;
        quant::QuantType format;
      } parts[3] = {{1, I, H, L.w1_offset(), L.format}, {3, I, H, L.w3_offset(), L.format},
                    {2, H, I, L.w2_offset(), L.down_format}};
      for (const auto& p : parts) {
        const std::string name = n.expert(d, e, p.which);
        if (ck.stored_blocks(name) == p.format) {  // stored in the pool's format: the blocks as they are
          // NaN/Inf refused as for any tensor, from the blocks' scales (no float copy): the file
          // link checks each expert it reads the same way.
          ck.read_blocks(name, dst + p.offset, "layer " + std::to_string(d) + ", expert " + std::to_string(e));
          continue;
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
