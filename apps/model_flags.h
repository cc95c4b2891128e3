// The model-shape and dtype flags that `ferry moe make-tiny` and `ferry moe pretrain` share.
#pragma once

#include <string>

#include "moe/model/dtype.h"

namespace CLI { class App; }
namespace ferry::moe { struct MoeConfig; }

namespace ferry::apps {

// --layers, --experts, --top-k, --hidden, --intermediate, --heads, --kv-heads, --head-dim and
// --max-pos, bound to `c`'s fields (their values now are the defaults --help shows).
void add_shape_flags(CLI::App& app, moe::MoeConfig& c);

// A --dtype value: f32, bf16 or f16. Throws InvalidArgument naming the flag.
moe::DType dtype_flag(const std::string& s);

}  // namespace ferry::apps
