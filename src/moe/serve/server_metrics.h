// What `GET /metrics` reports, in Prometheus' text exposition format (version 0.0.4): counters of
// requests and tokens, the queue and batch, the offloading engine's hit rate, bytes moved, io wait
// and device memory against its budget, and histograms of TTFT, TPOT and the batch size per step.
// Thread-safe: HTTP handlers and the batcher's thread record, /metrics renders.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "moe/engine/continuous_batcher.h"

namespace ferry::moe {

// A cumulative histogram with fixed upper bounds (le), as Prometheus defines it.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double value);
  // NAME_bucket{le=...}, NAME_sum, NAME_count lines, after the HELP and TYPE lines.
  std::string render(const std::string& name, const std::string& help) const;
  std::uint64_t count() const { return count_; }

 private:
  std::vector<double> bounds_;
  std::vector<std::uint64_t> counts_;  // per bound, not cumulative; the last is +Inf
  double sum_ = 0;
  std::uint64_t count_ = 0;
};

class ServerMetrics {
 public:
  ServerMetrics();
  void request_done(int status);                    // every answered request, by status code
  void request_tokens(int prompt, int completion);  // a finished generation
  void first_token(double ttft_s);
  void finished(double tpot_s);                     // mean time per output token after the first
  void step(const StepInfo& info);
  // The exposition text; `batcher` gives the queue, running sequences, prefix cache and engine
  // counters, `options` the slots and bounds.
  std::string render(const BatcherSnapshot& batcher, const BatcherOptions& options) const;

 private:
  mutable std::mutex mu_;
  std::map<int, std::uint64_t> requests_;  // by status
  std::uint64_t prompt_tokens_ = 0, completion_tokens_ = 0, prefill_tokens_ = 0, decode_tokens_ = 0;
  Histogram ttft_, tpot_, batch_, step_s_;
};

}  // namespace ferry::moe
