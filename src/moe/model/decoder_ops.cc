#include "moe/model/decoder_ops.h"

#include <cmath>

#include <torch/torch.h>

#include "core/error.h"

namespace ferry::moe {

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& w, double eps) {
  return x * torch::rsqrt(x.pow(2).mean(-1, true) + eps) * w;
}

at::Tensor activation(const std::string& hidden_act, const at::Tensor& x) {
  if (hidden_act == "silu" || hidden_act == "swish") return torch::silu(x);
  if (hidden_act == "gelu") return torch::gelu(x);
  if (hidden_act == "gelu_pytorch_tanh" || hidden_act == "gelu_new") return torch::gelu(x, "tanh");
  FERRY_THROW(InvalidArgument, "hidden_act '", hidden_act, "' is not implemented");
}

at::Tensor gated_mlp(const at::Tensor& x, const at::Tensor& w1, const at::Tensor& w3, const at::Tensor& w2,
                     const std::string& hidden_act) {
  return torch::matmul(activation(hidden_act, torch::matmul(x, w1.t())) * torch::matmul(x, w3.t()), w2.t());
}

at::Tensor rope_inv_freq(const MoeConfig& c) {
  const std::int64_t D = c.head_dim;
  at::Tensor inv = 1.0 / torch::pow(c.rope_theta, torch::arange(0, D, 2, torch::kFloat64) / static_cast<double>(D));
  const RopeScaling& s = c.rope_scaling;
  if (s.type == "default") return inv;
  if (s.type == "linear") return inv / s.factor;
  FERRY_CHECK(s.type == "llama3", "rope_scaling type '", s.type, "' passed the config's checks");
  // Wavelengths longer than the original context / low_freq_factor are slowed by `factor`, those
  // shorter than ... / high_freq_factor kept, the ones between interpolated smoothly.
  const double old = s.original_max_position_embeddings;
  const double low_wavelen = old / s.low_freq_factor, high_wavelen = old / s.high_freq_factor;
  at::Tensor wavelen = 2 * M_PI / inv;
  at::Tensor scaled = torch::where(wavelen > low_wavelen, inv / s.factor, inv);
  at::Tensor smooth = (old / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
  at::Tensor smoothed = (1 - smooth) * scaled / s.factor + smooth * scaled;
  at::Tensor medium = wavelen.ge(high_wavelen).logical_and(wavelen.le(low_wavelen));
  return torch::where(medium, smoothed, scaled);
}

}  // namespace ferry::moe
