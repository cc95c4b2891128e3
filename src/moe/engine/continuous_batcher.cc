#include "moe/engine/continuous_batcher.h"

#include <algorithm>
#include <exception>

#include <ATen/Parallel.h>

#include "core/clock.h"
#include "core/error.h"
#include "moe/engine/kv_cache.h"

namespace ferry::moe {

const char* finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::kLength: return "length";
    case FinishReason::kStop: return "stop";
    case FinishReason::kCancelled: return "cancelled";
    case FinishReason::kError: return "error";
  }
  return "error";
}

namespace {

RequestShape request_shape(const GenerationJob& job) {
  return {static_cast<std::int64_t>(job.prompt.size()), static_cast<std::int64_t>(job.sampling.max_new_tokens)};
}

}  // namespace

// A job holding a slot: its engine sequence, how much of its prompt is in, what it generated.
struct ContinuousBatcher::Running {
  GenerationJob job;
  int sequence = -1;
  std::size_t prompt_done = 0;  // prompt tokens already through the engine
  int generated = 0;
  std::int32_t last = 0;        // the token the next decode step feeds
  std::vector<std::int32_t> tokens;  // prompt and generated tokens (penalties; the cache's key), room reserved at admission
  std::uint64_t rng = 0;
  bool prefilling() const { return prompt_done < job.prompt.size(); }
  RequestShape shape() const { return request_shape(job); }
};

ContinuousBatcher::ContinuousBatcher(MoeEngine& engine, BatcherOptions options, std::unique_ptr<StepScheduler> scheduler)
    : engine_(engine), options_(options), scheduler_(std::move(scheduler)) {
  FERRY_REQUIRE_OP(options_.max_queue, >=, 0, "--max-queue");
  if (!scheduler_)
    scheduler_ = make_fcfs_scheduler({options_.max_batch, options_.prefill_chunk, options_.kv_bytes}, engine.config());
}

ContinuousBatcher::~ContinuousBatcher() { stop(0); }

void ContinuousBatcher::start() {
  FERRY_CHECK(!thread_.joinable(), "batcher started twice");
  thread_ = std::thread([this] { loop(); });
}

ContinuousBatcher::Admit ContinuousBatcher::submit(GenerationJob job) {
  FERRY_REQUIRE(!job.prompt.empty(), "a job needs at least one prompt token");
  FERRY_REQUIRE(job.sampling.max_new_tokens >= 1, "a job needs max_new_tokens >= 1");
  FERRY_REQUIRE(job.sink != nullptr, "a job needs a sink");
  if (std::string why = scheduler_->refusal(request_shape(job)); !why.empty()) FERRY_THROW(InvalidArgument, why);
  {
    std::lock_guard lock(mu_);
    if (stopping_) return Admit::kStopping;
    if (static_cast<int>(queue_.size()) >= options_.max_queue + options_.max_batch - snapshot_.running)
      return Admit::kQueueFull;
    queue_.push_back(std::move(job));
    snapshot_.queued = static_cast<int>(queue_.size());
  }
  cv_.notify_all();
  return Admit::kQueued;
}

void ContinuousBatcher::stop(double drain_s) {
  {
    std::lock_guard lock(mu_);
    if (!stopping_) {
      stopping_ = true;
      deadline_s_ = now_s() + std::max(0.0, drain_s);
    }
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ContinuousBatcher::set_step_observer(std::function<void(const StepInfo&)> observer) {
  observer_ = std::move(observer);
}

BatcherSnapshot ContinuousBatcher::snapshot() const {
  std::lock_guard lock(mu_);
  return snapshot_;
}

void ContinuousBatcher::finish(Running& r, FinishReason why, const std::string& error) {
  if (r.sequence >= 0) {
    if (options_.prefix_cache > 0 && r.job.cache_prompt && why != FinishReason::kError) {
      // Its cache holds the tokens fed so far: the prompt and every generated token but the last.
      const auto held = std::min(static_cast<std::size_t>(engine_.sequence_position(r.sequence)), r.tokens.size());
      r.tokens.resize(held);
      cache_.push_back({r.sequence, std::move(r.tokens), kv_cache_bytes(engine_.config(), scheduler_->max_positions(r.shape()))});
      trim_cache(static_cast<std::size_t>(options_.prefix_cache));
    } else {
      engine_.close_sequence(r.sequence);
    }
    scheduler_->release(r.shape());
    // Its slot is free before its client hears the end: a request sent right after the answer
    // finds room (submit() counts snapshot_.running).
    std::lock_guard lock(mu_);
    --snapshot_.running;
  }
  r.sequence = -1;  // the loop drops it before the next step
  r.job.sink->on_finish(why, error);
}

void ContinuousBatcher::open(Running& r) {
  const std::int64_t limit = scheduler_->max_positions(r.shape());
  r.tokens.reserve(r.job.prompt.size() + static_cast<std::size_t>(r.job.sampling.max_new_tokens));
  r.tokens = r.job.prompt;
  std::size_t best = 0, at = cache_.size();
  if (r.job.cache_prompt)
    for (std::size_t i = 0; i < cache_.size(); ++i) {
      const auto& t = cache_[i].tokens;
      // At most all but the prompt's last token: the step that feeds it gives the first logits.
      const std::size_t most = std::min(t.size(), r.job.prompt.size() - 1);
      const std::size_t n = static_cast<std::size_t>(
          std::mismatch(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(most), r.job.prompt.begin()).first - t.begin());
      if (n > best) best = n, at = i;
    }
  if (at < cache_.size()) {
    const int seq = cache_[at].sequence;
    cache_.erase(cache_.begin() + static_cast<std::ptrdiff_t>(at));
    if (engine_.rewind_sequence(seq, static_cast<std::int64_t>(best), limit)) {
      r.sequence = seq;
      r.prompt_done = best;
      std::lock_guard lock(mu_);
      snapshot_.prompt_tokens_cached += best;
    } else {
      engine_.close_sequence(seq);
      best = 0;
    }
  }
  if (r.sequence < 0) r.sequence = engine_.open_sequence({limit, 0});
  r.job.sink->on_admitted(static_cast<int>(r.prompt_done));
}

void ContinuousBatcher::trim_cache(std::size_t keep) {
  auto held = [&] {
    std::uint64_t b = 0;
    for (const auto& c : cache_) b += c.bytes;
    return b;
  };
  while (!cache_.empty() &&
         (cache_.size() > keep ||
          (options_.kv_bytes > 0 && scheduler_->kv_reserved_bytes() + held() > options_.kv_bytes))) {
    engine_.close_sequence(cache_.front().sequence);
    cache_.pop_front();
  }
}

void ContinuousBatcher::loop() {
  if (options_.threads > 0) at::set_num_threads(options_.threads);
  std::vector<Running> running;
  std::vector<std::size_t> joined;  // the running indices that joined at this step boundary
  for (;;) {
    bool past_deadline = false;
    joined.clear();
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty() || !running.empty(); });
      past_deadline = stopping_ && now_s() >= deadline_s_;
      if (stopping_ && queue_.empty() && running.empty()) break;
      // Joins at the step boundary, in queue order, while the scheduler admits.
      while (!past_deadline && !queue_.empty() &&
             scheduler_->admit(request_shape(queue_.front()), static_cast<int>(running.size()))) {
        Running r;
        r.job = std::move(queue_.front());
        queue_.pop_front();
        r.rng = r.job.sampling.seed;
        running.push_back(std::move(r));
        joined.push_back(running.size() - 1);
      }
      if (past_deadline) {  // what still waits is cancelled, outside the lock
        for (auto& job : queue_) {
          Running r;
          r.job = std::move(job);
          running.push_back(std::move(r));
        }
        queue_.clear();
      }
      snapshot_.queued = static_cast<int>(queue_.size());
      snapshot_.running = static_cast<int>(std::count_if(running.begin(), running.end(),
                                                         [](const Running& r) { return r.sequence >= 0; }));
    }
    // The joiners' sequences, outside the lock (a cached prefix is found, its cache rewound), then
    // the cached sequences the joiners' reservations leave no room for.
    for (std::size_t i : joined) open(running[i]);
    if (!joined.empty()) trim_cache(static_cast<std::size_t>(options_.prefix_cache));
    // Leaves: gone clients, and everything once the drain time is over.
    for (auto& r : running)
      if (past_deadline || r.job.sink->cancelled()) finish(r, FinishReason::kCancelled, "");
    std::erase_if(running, [](const Running& r) { return r.sequence < 0; });
    bool stepped = false;
    if (!running.empty()) {
      try {
        run_step(running);
        stepped = true;
      } catch (const std::exception& e) {  // never escapes the thread: every job of the step hears it
        for (auto& r : running) finish(r, FinishReason::kError, e.what());
        running.clear();
      }
      std::erase_if(running, [](const Running& r) { return r.sequence < 0; });
    }
    std::lock_guard lock(mu_);
    if (stepped) ++snapshot_.steps;
    snapshot_.cached = static_cast<int>(cache_.size());
    snapshot_.running = static_cast<int>(running.size());
    snapshot_.kv_reserved_bytes = scheduler_->kv_reserved_bytes();
    snapshot_.engine = engine_.stats();
  }
  trim_cache(0);  // the kept caches go with the batcher
  std::lock_guard lock(mu_);
  snapshot_.cached = 0;
}

void ContinuousBatcher::run_step(std::vector<Running>& running) {
  // The step's inputs reuse the buffers of the last step (no allocation per token once they have grown).
  std::vector<RunningSequence>& states = step_states_;
  states.clear();
  for (const auto& r : running) states.push_back({static_cast<std::int64_t>(r.job.prompt.size() - r.prompt_done)});
  const std::vector<std::int64_t> plan = scheduler_->plan(states);
  std::vector<MoeEngine::SequenceInput>& inputs = step_inputs_;
  std::vector<std::size_t>& who = step_who_;  // running index of each input
  std::size_t n_inputs = 0;
  who.clear();
  StepInfo info;
  for (std::size_t i = 0; i < running.size(); ++i) {
    Running& r = running[i];
    const auto n = static_cast<std::size_t>(plan[i]);
    if (n == 0) continue;  // sits this step out (waits for the next step's prefill share)
    if (n_inputs == inputs.size()) inputs.emplace_back();
    MoeEngine::SequenceInput& in = inputs[n_inputs++];
    in.sequence = r.sequence;
    if (!r.prefilling()) {
      FERRY_CHECK_EQ(n, 1, "tokens the scheduler gave a decoding sequence");
      in.tokens.assign(1, r.last);
      ++info.decode_tokens;
    } else {
      FERRY_CHECK(n <= r.job.prompt.size() - r.prompt_done, "the scheduler gave a sequence more than its prompt");
      in.tokens.assign(r.job.prompt.begin() + static_cast<std::ptrdiff_t>(r.prompt_done),
                       r.job.prompt.begin() + static_cast<std::ptrdiff_t>(r.prompt_done + n));
      info.prefill_tokens += static_cast<int>(n);
    }
    who.push_back(i);
  }
  inputs.resize(n_inputs);  // the engine takes the whole vector
  FERRY_CHECK(!inputs.empty(), "the scheduler planned a step without tokens");
  info.sequences = static_cast<int>(inputs.size());
  const double t0 = now_s();
  const auto logits = engine_.step(inputs);
  info.step_s = now_s() - t0;
  const int V = engine_.config().vocab_size;
  const std::int64_t max_pos = engine_.config().max_position_embeddings;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    Running& r = running[who[k]];
    if (r.prefilling()) {
      r.prompt_done += inputs[k].tokens.size();
      if (r.prefilling()) continue;  // the logits of a prompt chunk before the last are not needed
    }
    const float* row = logits.data() + k * V;
    const std::int32_t tok = sample_token(row, V, r.job.sampling, r.rng, r.tokens);
    const auto& stops = r.job.stop_tokens;
    if (std::find(stops.begin(), stops.end(), tok) != stops.end()) {
      finish(r, FinishReason::kStop, "");
      continue;
    }
    ++r.generated;
    r.last = tok;
    r.tokens.push_back(tok);
    const bool more = r.job.sink->on_token(tok, std::span<const float>(row, static_cast<std::size_t>(V)));
    const bool full = r.generated >= r.job.sampling.max_new_tokens || engine_.sequence_position(r.sequence) >= max_pos;
    if (!more || full) finish(r, more ? FinishReason::kLength : FinishReason::kStop, "");
  }
  if (observer_) observer_(info);
}

}  // namespace ferry::moe
