#include "moe/engine/trace_recorder.h"

#include <cstring>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/metrics.h"

namespace ferry::moe {

TraceRecorder::TraceRecorder(MoeEngine* engine, TraceRecorderOptions options)
    : engine_(engine), options_(std::move(options)) {
  const MoeConfig& c = engine_->config();
  trace_.model = "ferry";
  trace_.path = options_.jsonl_path;
  trace_.num_layers = c.num_moe_layers();  // the layers with experts
  trace_.num_experts = c.num_experts;
  trace_.top_k = c.top_k;
  hidden_size_ = c.hidden_size;
  if (!options_.jsonl_path.empty()) {
    jsonl_ = std::make_unique<JsonlWriter>(options_.jsonl_path);
    if (options_.hidden_states) {
      const std::string p = options_.jsonl_path + ".hidden.bin";
      hidden_.open(p, std::ios::binary | std::ios::trunc);
      if (!hidden_) FERRY_THROW(IoError, "cannot write '", p, "'");
      char header[32] = {0};
      std::memcpy(header, "FERRYHID", 8);
      const std::uint32_t version = 1, hs = static_cast<std::uint32_t>(hidden_size_), dtype = 0;
      std::memcpy(header + 8, &version, 4);
      std::memcpy(header + 12, &hs, 4);
      std::memcpy(header + 16, &dtype, 4);
      hidden_.write(header, 32);
    }
  }
  engine_->set_route_observer([this](int layer, int n, int k, const std::int64_t* e, const float* w, const float* h,
                                     int hs) { on_route(layer, n, k, e, w, h, hs); });
}

TraceRecorder::~TraceRecorder() {
  engine_->set_route_observer(nullptr);
  try {
    finish();
  } catch (...) {  // a destructor must not throw; finish() reports errors when called explicitly
  }
}

void TraceRecorder::record_sequence(const std::vector<std::int32_t>& tokens) {
  FERRY_REQUIRE(!tokens.empty(), "empty sequence");
  ++sequence_;
  first_token_ = trace_.tokens.size();
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    TraceToken t;
    t.sequence = sequence_;
    t.position = static_cast<int>(i);
    t.experts.resize(trace_.num_layers);
    t.weights.resize(trace_.num_layers);
    trace_.tokens.push_back(std::move(t));
  }
  engine_->reset();
  engine_->forward({tokens});
}

void TraceRecorder::on_route(int layer, int num_tokens, int top_k, const std::int64_t* experts, const float* weights,
                             const float* hidden, int hidden_size) {
  for (int t = 0; t < num_tokens; ++t) {
    TraceToken& tok = trace_.tokens.at(first_token_ + t);
    tok.experts[layer].assign(experts + t * top_k, experts + (t + 1) * top_k);
    tok.weights[layer].assign(weights + t * top_k, weights + (t + 1) * top_k);
    if (jsonl_) {
      nlohmann::json row = {{"dataset", options_.dataset},  {"problem_id", sequence_},
                            {"layer", layer},               {"token_idx", t},
                            {"experts", tok.experts[layer]}, {"gating_probs", tok.weights[layer]}};
      if (hidden_.is_open()) row["hidden_row"] = rows_;
      jsonl_->write(row);
      if (hidden_.is_open())
        hidden_.write(reinterpret_cast<const char*>(hidden + static_cast<std::size_t>(t) * hidden_size),
                      static_cast<std::streamsize>(sizeof(float) * hidden_size));
    }
    ++rows_;
  }
}

void TraceRecorder::finish() {
  if (!hidden_.is_open()) return;
  hidden_.seekp(24);
  hidden_.write(reinterpret_cast<const char*>(&rows_), 8);
  hidden_.seekp(0, std::ios::end);
  hidden_.flush();
  if (!hidden_) FERRY_THROW(IoError, "failed writing '", options_.jsonl_path, ".hidden.bin'");
}

}  // namespace ferry::moe

namespace ferry::moe {

RoutingTrace record_routing(const std::string& model_dir, const std::vector<std::vector<std::int32_t>>& sequences,
                            const std::string& jsonl_path, const std::string& dataset,
                            const std::string& weights) {
  EngineOptions eo;
  eo.weights = weights;
  eo.policy = "lru";
  eo.device_mem = "100%";
  eo.link = "none";
  eo.preload = true;
  auto eng = MoeEngine::open(model_dir, eo);
  TraceRecorderOptions ro;
  ro.jsonl_path = jsonl_path;
  ro.dataset = dataset;
  TraceRecorder rec(eng.get(), ro);
  for (const auto& s : sequences) rec.record_sequence(s);
  rec.finish();
  return rec.trace();
}

}  // namespace ferry::moe
