#include "moe/store/host_pool.h"

namespace ferry::moe {

std::unique_ptr<HostPool> HostPool::load(const Checkpoint& ck, bool with_data) {
  const MoeConfig& c = ck.config();
  auto pool = std::make_unique<HostPool>();
  pool->layout_ = {c.hidden_size, c.intermediate_size};
  pool->num_layers_ = c.num_moe_layers();  // MoE layers: a dense layer has no experts
  pool->num_experts_ = c.num_experts;
  TensorNames n(c);
  const std::int64_t H = c.hidden_size, I = c.intermediate_size;
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
  pool->data_.resize(static_cast<std::size_t>(pool->layout_.floats()) * c.num_moe_layers() * c.num_experts);
  for (int l = 0; l < c.num_moe_layers(); ++l)
    for (int e = 0; e < c.num_experts; ++e) {
      float* dst = const_cast<float*>(pool->expert({l, e}));
      const int d = c.decoder_layer(l);
      ck.read_f32(n.expert(d, e, 1), {I, H}, dst + pool->layout_.w1_offset());
      ck.read_f32(n.expert(d, e, 3), {I, H}, dst + pool->layout_.w3_offset());
      ck.read_f32(n.expert(d, e, 2), {H, I}, dst + pool->layout_.w2_offset());
    }
  return pool;
}

}  // namespace ferry::moe
