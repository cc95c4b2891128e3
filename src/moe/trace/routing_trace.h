// Recorded expert routing: readers for the three formats of ../shared/data/moe-traces (Mixtral
// JSONL rows per token and layer, granite JSON prompts, layer-0 JSONL route rows) and for ferry's
// own traces (the Mixtral row format, written by `ferry moe trace`).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace ferry::moe {

// Limits of the readers: traces beyond them are rejected (FormatError) rather than trusted,
// since consumers size per-layer and expert x expert tables from these numbers.
inline constexpr int kMaxTraceLayers = 512;
inline constexpr int kMaxTraceExperts = 512;

struct TraceToken {
  int sequence = 0;      // prompt / problem / request, numbered in order of appearance
  int position = 0;      // token index inside the sequence
  bool prefill = false;  // part of the prompt (granite traces); decode tokens otherwise
  std::vector<std::vector<int>> experts;    // [layer][k] routed experts
  std::vector<std::vector<float>> weights;  // [layer][k] gate weights (empty when unknown)
};

struct RoutingTrace {
  std::string model;  // as the file names it
  std::string path;
  int num_layers = 0;
  int num_experts = 0;  // from the file, else max expert id + 1
  int top_k = 0;
  std::vector<TraceToken> tokens;  // decode order: by (sequence, position)
};

// Rows {"problem_id", "layer", "token_idx", "experts", "gating_probs"}; keeps only tokens with every
// layer present (the README: a token is complete when all layers are present).
RoutingTrace read_mixtral_trace(const std::string& path);
// {"model", "num_layers", "num_experts", "top_k", "prompts": {name: {"prefill", "decode"}}}.
RoutingTrace read_granite_trace(const std::string& path);
// {"type": "meta"} then {"type": "route", "req_id", "token_idx", "layer", "topk_ids", "topk_weights"}.
RoutingTrace read_layer0_trace(const std::string& path);
// The same readers over a stream; `path` only names the source in messages.
RoutingTrace read_mixtral_trace(std::istream& in, const std::string& path);
RoutingTrace read_granite_trace(std::istream& in, const std::string& path);
RoutingTrace read_layer0_trace(std::istream& in, const std::string& path);
// Detects the format from the first bytes. Throws IoError / FormatError naming file and line.
RoutingTrace read_routing_trace(const std::string& path);

// ../shared/data/moe-traces relative to the repository (FERRY_SOURCE_DIR or the working
// directory and its parents); empty when absent.
std::string find_shared_traces_dir();

}  // namespace ferry::moe
