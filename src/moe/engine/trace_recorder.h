// Records the engine's routing per token and layer: in memory (a RoutingTrace), optionally as
// JSONL rows in the Mixtral trace format of ../shared/data/moe-traces plus a binary side file of
// the router inputs (hidden states) for predictor training.
//
// Side file FILE.hidden.bin: 32-byte header "FERRYHID", u32 version (1), u32 hidden_size,
// u32 dtype (0 = float32), u32 reserved, u64 rows; then rows x hidden_size float32, row i belonging
// to JSONL line i (its "hidden_row" field).
#pragma once

#include <cstdint>
#include <fstream>
#include <memory>
#include <string>

#include "moe/engine/engine.h"
#include "moe/trace/routing_trace.h"

namespace ferry { class JsonlWriter; }

namespace ferry::moe {

struct TraceRecorderOptions {
  std::string jsonl_path;      // "" = memory only
  bool hidden_states = true;   // write the side file next to the JSONL
  std::string dataset = "ferry";  // the rows' "dataset" field
};

class TraceRecorder {
 public:
  // Observes `engine` until destroyed (engine outlives the recorder).
  TraceRecorder(MoeEngine* engine, TraceRecorderOptions options);
  ~TraceRecorder();
  TraceRecorder(const TraceRecorder&) = delete;
  TraceRecorder& operator=(const TraceRecorder&) = delete;

  // Feeds one sequence (batch 1, from position 0) through the engine, recording its routing.
  void record_sequence(const std::vector<std::int32_t>& tokens);
  const RoutingTrace& trace() const { return trace_; }
  std::uint64_t rows() const { return rows_; }
  // Writes the row count into the side file header and flushes.
  void finish();

 private:
  void on_route(int layer, int num_tokens, int top_k, const std::int64_t* experts, const float* weights,
                const float* hidden, int hidden_size);

  MoeEngine* engine_;  // not owned; outlives the recorder
  TraceRecorderOptions options_;
  RoutingTrace trace_;
  std::unique_ptr<JsonlWriter> jsonl_;
  std::ofstream hidden_;
  std::uint64_t rows_ = 0;
  int sequence_ = -1;
  std::size_t first_token_ = 0;  // index in trace_.tokens of the current sequence's first token
  int hidden_size_ = 0;
};

}  // namespace ferry::moe

namespace ferry::moe {

// Routing of `sequences` (each from position 0) through the model in `model_dir` with every expert
// resident; written to `jsonl_path` (plus side file) unless it is empty. `weights`: the experts'
// format (EngineOptions::weights; "" = as stored).
RoutingTrace record_routing(const std::string& model_dir, const std::vector<std::vector<std::int32_t>>& sequences,
                            const std::string& jsonl_path = "", const std::string& dataset = "ferry",
                            const std::string& weights = "");

}  // namespace ferry::moe
