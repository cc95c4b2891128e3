// Training data for predictors: a routing trace plus, when `ferry moe trace` wrote one, its
// hidden-state side file FILE.hidden.bin (format in engine/trace_recorder.h), matched row by row
// through the JSONL "hidden_row" field.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "moe/trace/routing_trace.h"

namespace ferry::moe {

struct PredictorTrace {
  RoutingTrace trace;
  int hidden_size = 0;                            // 0 when there are no hidden states
  std::vector<float> hidden;                      // [rows x hidden_size]
  std::vector<std::vector<std::int64_t>> row_of;  // [token][layer] -> row in hidden, -1 when absent

  bool has_hidden() const { return hidden_size > 0; }
  const float* hidden_at(std::size_t token, int layer) const {
    const std::int64_t r = row_of[token][layer];
    return r < 0 ? nullptr : hidden.data() + static_cast<std::size_t>(r) * hidden_size;
  }
  // Distinct sequence ids in token order.
  std::vector<int> sequences() const;
};

// Reads `path` (any format read_routing_trace knows) and, when `with_hidden` and PATH.hidden.bin
// exists, the hidden states. Throws IoError / FormatError naming the file (bad magic, version,
// dtype, size, or a hidden_row out of range).
PredictorTrace read_predictor_trace(const std::string& path, bool with_hidden = true);

}  // namespace ferry::moe
