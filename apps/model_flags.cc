#include "apps/model_flags.h"

#include <CLI/CLI.hpp>

#include "core/error.h"
#include "moe/model/config.h"

namespace ferry::apps {

void add_shape_flags(CLI::App& app, moe::MoeConfig& c) {
  app.add_option("--layers", c.num_layers, "decoder layers")->capture_default_str();
  app.add_option("--experts", c.num_experts, "routed experts per layer")->capture_default_str();
  app.add_option("--top-k", c.top_k, "experts per token")->capture_default_str();
  app.add_option("--hidden", c.hidden_size, "model width")->capture_default_str();
  app.add_option("--intermediate", c.intermediate_size, "expert FFN width")->capture_default_str();
  app.add_option("--heads", c.num_heads, "attention heads")->capture_default_str();
  app.add_option("--kv-heads", c.num_kv_heads, "key/value heads")->capture_default_str();
  app.add_option("--head-dim", c.head_dim, "per-head width")->capture_default_str();
  app.add_option("--max-pos", c.max_position_embeddings, "longest sequence")->capture_default_str();
}

moe::DType dtype_flag(const std::string& s) {
  auto d = moe::parse_dtype(s);
  if (!d) FERRY_THROW(InvalidArgument, "invalid --dtype '", s, "': expected f32, bf16 or f16");
  return *d;
}

}  // namespace ferry::apps
