#include "moe/serve/server_metrics.h"

#include <algorithm>
#include <sstream>

namespace ferry::moe {

namespace {

std::string number(double v) {
  std::ostringstream s;
  s.precision(9);
  s << v;
  return s.str();
}

void metric(std::ostringstream& s, const std::string& name, const std::string& type, const std::string& help, double v) {
  s << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n" << name << " " << number(v) << "\n";
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  const auto i = static_cast<std::size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin());
  ++counts_[i];
  sum_ += value;
  ++count_;
}

std::string Histogram::render(const std::string& name, const std::string& help) const {
  std::ostringstream s;
  s << "# HELP " << name << " " << help << "\n# TYPE " << name << " histogram\n";
  std::uint64_t cum = 0;
  for (std::size_t i = 0; i < bounds_.size(); ++i) {
    cum += counts_[i];
    s << name << "_bucket{le=\"" << number(bounds_[i]) << "\"} " << cum << "\n";
  }
  s << name << "_bucket{le=\"+Inf\"} " << count_ << "\n" << name << "_sum " << number(sum_) << "\n"
    << name << "_count " << count_ << "\n";
  return s.str();
}

ServerMetrics::ServerMetrics()
    : ttft_({0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}),
      tpot_({0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}),
      batch_({1, 2, 4, 8, 16, 32, 64, 128, 256}),
      step_s_({0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}) {}

void ServerMetrics::request_done(int status) {
  std::lock_guard lock(mu_);
  ++requests_[status];
}

void ServerMetrics::request_tokens(int prompt, int completion) {
  std::lock_guard lock(mu_);
  prompt_tokens_ += static_cast<std::uint64_t>(prompt);
  completion_tokens_ += static_cast<std::uint64_t>(completion);
}

void ServerMetrics::first_token(double ttft_s) {
  std::lock_guard lock(mu_);
  ttft_.observe(ttft_s);
}

void ServerMetrics::finished(double tpot_s) {
  std::lock_guard lock(mu_);
  tpot_.observe(tpot_s);
}

void ServerMetrics::step(const StepInfo& info) {
  std::lock_guard lock(mu_);
  batch_.observe(info.sequences);
  step_s_.observe(info.step_s);
  prefill_tokens_ += static_cast<std::uint64_t>(info.prefill_tokens);
  decode_tokens_ += static_cast<std::uint64_t>(info.decode_tokens);
}

std::string ServerMetrics::render(const BatcherSnapshot& b, const BatcherOptions& o) const {
  const int max_batch = o.max_batch;
  std::lock_guard lock(mu_);
  std::ostringstream s;
  s << "# HELP ferry_requests_total HTTP requests answered, by status code\n# TYPE ferry_requests_total counter\n";
  for (const auto& [status, n] : requests_) s << "ferry_requests_total{code=\"" << status << "\"} " << n << "\n";
  metric(s, "ferry_prompt_tokens_total", "counter", "prompt tokens of finished requests", static_cast<double>(prompt_tokens_));
  metric(s, "ferry_generation_tokens_total", "counter", "tokens generated for finished requests",
         static_cast<double>(completion_tokens_));
  metric(s, "ferry_prefill_tokens_total", "counter", "prompt tokens through the engine", static_cast<double>(prefill_tokens_));
  metric(s, "ferry_decode_tokens_total", "counter", "decode tokens through the engine", static_cast<double>(decode_tokens_));
  metric(s, "ferry_queue_length", "gauge", "requests waiting for a batch slot", b.queued);
  metric(s, "ferry_running_sequences", "gauge", "sequences in the running batch", b.running);
  metric(s, "ferry_max_batch", "gauge", "batch slots (--max-batch)", max_batch);
  metric(s, "ferry_steps_total", "counter", "engine steps", static_cast<double>(b.steps));
  // Slots, as llama.cpp's server counts them: busy ones run a request; idle ones may hold a kept cache.
  metric(s, "ferry_slots_busy", "gauge", "batch slots running a request", b.running);
  metric(s, "ferry_slots_idle", "gauge", "batch slots free", std::max(0, max_batch - b.running));
  metric(s, "ferry_prefix_cache_sequences", "gauge", "finished sequences whose KV cache is kept for prefix reuse", b.cached);
  metric(s, "ferry_prefix_cache_capacity", "gauge", "most sequences kept for prefix reuse (--prefix-cache)", o.prefix_cache);
  metric(s, "ferry_prompt_tokens_cached_total", "counter", "prompt tokens reused from the prefix cache, not prefilled",
         static_cast<double>(b.prompt_tokens_cached));
  metric(s, "ferry_kv_cache_reserved_bytes", "gauge", "KV cache memory reserved by the running requests",
         static_cast<double>(b.kv_reserved_bytes));
  metric(s, "ferry_kv_cache_usage_ratio", "gauge", "reserved / bound (--kv-mem; 0 without a bound)",
         o.kv_bytes ? static_cast<double>(b.kv_reserved_bytes) / static_cast<double>(o.kv_bytes) : 0.0);
  const EngineStats& e = b.engine;
  metric(s, "ferry_expert_accesses_total", "counter", "routed expert activations (layer, expert, step)",
         static_cast<double>(e.expert_accesses));
  metric(s, "ferry_expert_hits_total", "counter", "activations whose expert was resident or on its way",
         static_cast<double>(e.hits));
  metric(s, "ferry_expert_hit_rate", "gauge", "expert hits / accesses since start", e.hit_rate());
  metric(s, "ferry_expert_host_execs_total", "counter", "experts executed on the host", static_cast<double>(e.host_execs));
  metric(s, "ferry_expert_bytes_moved_total", "counter", "expert bytes copied to the device",
         static_cast<double>(e.store.bytes_moved));
  metric(s, "ferry_io_wait_seconds_total", "counter", "compute time spent waiting for expert transfers", e.store.io_wait_s);
  metric(s, "ferry_device_memory_peak_bytes", "gauge", "peak device bytes held by experts", static_cast<double>(e.store.peak_bytes));
  metric(s, "ferry_device_memory_budget_bytes", "gauge", "device budget for experts (--device-mem)",
         static_cast<double>(e.budget_bytes));
  s << ttft_.render("ferry_time_to_first_token_seconds", "request arrival to first generated token")
    << tpot_.render("ferry_time_per_output_token_seconds", "mean time per output token after the first, per request")
    << batch_.render("ferry_batch_size", "sequences per engine step")
    << step_s_.render("ferry_step_seconds", "engine step time");
  return s.str();
}

}  // namespace ferry::moe
