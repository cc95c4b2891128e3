// Continuous batching (iteration-level scheduling; Yu et al., "Orca", OSDI 2022; Kwon et al.,
// "vLLM", SOSP 2023): one thread owns the engine and runs steps; every step each running sequence
// decodes one token, and jobs from the queue join at the next step boundary, leave when done.
// Sequences of different lengths share each step (MoeEngine::step), so the offloading policy sees
// the routed tokens of the true mixed batch.
//
// Who joins and what each sequence feeds is the StepScheduler's (step_scheduler.h); by default
// first come, first served with chunked prefill (Agrawal et al., "Sarathi", 2023): a step carries
// at most `prefill_chunk` prompt tokens besides the decode tokens, so a running decode waits per
// step at most for the forward of prefill_chunk extra tokens, however long the prompt that just
// arrived; and a request joins only while the KV memory of the running ones leaves room for its own.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "moe/engine/engine.h"
#include "moe/engine/generate.h"
#include "moe/engine/step_scheduler.h"

namespace ferry::moe {

enum class FinishReason { kLength, kStop, kCancelled, kError };
// "length", "stop", "cancelled", "error".
const char* finish_reason_name(FinishReason reason);

// What a job reports back; called on the batcher's thread, so each call must be quick.
class GenerationSink {
 public:
  virtual ~GenerationSink() = default;
  // Each generated token in order, with the logits it was drawn from (V values, valid during the
  // call); false ends the sequence with kStop (a stop string was found).
  virtual bool on_token(std::int32_t token, std::span<const float> logits) = 0;
  // Once, last. `error` is set for kError.
  virtual void on_finish(FinishReason reason, const std::string& error) = 0;
  // Polled before every step: true when the client has gone; the slot is freed at that step.
  virtual bool cancelled() const = 0;
  // When the job joins the batch: `cached_tokens` of its prompt are reused from a finished
  // sequence's KV cache (prefix caching) and will not be prefilled again.
  virtual void on_admitted(int cached_tokens) { (void)cached_tokens; }
};

struct GenerationJob {
  std::vector<std::int32_t> prompt;       // at least one token
  SamplingOptions sampling;               // max_new_tokens, temperature, top_k, top_p, seed
  std::vector<std::int32_t> stop_tokens;  // end-of-sequence ids: finish with kStop, not sent to the sink
  std::shared_ptr<GenerationSink> sink;   // shared with the submitter (an HTTP handler), which may outlive the job or not
  bool cache_prompt = true;               // reuse a cached prefix of the prompt, and leave this sequence's cache for later ones
};

struct BatcherOptions {
  int max_batch = 16;          // sequences in one step (decoding or in prefill)
  int max_queue = 64;          // jobs waiting for a slot; submit() refuses more
  int prefill_chunk = 32;      // prompt tokens per step, over every sequence still in prefill
  std::uint64_t kv_bytes = 0;  // KV cache memory of the running sequences together; 0: unbounded
  // Prefix caching: finished sequences whose KV caches are kept (least recently used leaves first),
  // so that a prompt sharing a prefix with one (a chat resending its conversation) prefills only
  // the rest; kept caches count against kv_bytes and leave when a running request needs it. 0: off.
  int prefix_cache = 0;
  // libtorch threads of the batcher's thread, which runs every step (0: libtorch's setting). With
  // OpenMP each thread that computes keeps its own team of workers: a caller that computed before
  // (loading the model) should compute on one thread only, so that the two teams do not oversubscribe
  // the cores (libgomp then stops spinning between parallel regions, and every region waits for a wake-up).
  int threads = 0;
};

// One step, for metrics (on the batcher's thread).
struct StepInfo {
  int sequences = 0;       // in the step
  int decode_tokens = 0;   // one per decoding sequence
  int prefill_tokens = 0;  // prompt tokens of the step
  double step_s = 0;       // the engine's forward
};

struct BatcherSnapshot {
  int queued = 0, running = 0;
  int cached = 0;                         // finished sequences kept for prefix caching
  std::uint64_t prompt_tokens_cached = 0;  // prompt tokens reused from them, in all
  std::uint64_t steps = 0;
  std::uint64_t kv_reserved_bytes = 0;  // the scheduler's reservations for the running sequences
  EngineStats engine;  // after the last step
};

class ContinuousBatcher {
 public:
  // `engine` outlives the batcher; only the batcher's thread calls it between start() and stop().
  // The scheduler is the FCFS one of `options` unless one is given.
  ContinuousBatcher(MoeEngine& engine, BatcherOptions options, std::unique_ptr<StepScheduler> scheduler = nullptr);
  ~ContinuousBatcher();  // stop(0)
  ContinuousBatcher(const ContinuousBatcher&) = delete;
  ContinuousBatcher& operator=(const ContinuousBatcher&) = delete;

  void start();
  enum class Admit { kQueued, kQueueFull, kStopping };
  // Queues a job, or refuses it (the queue is full, or stop() began); a refused job's sink hears nothing.
  // InvalidArgument for a job that can never run (no prompt, no tokens to generate, no sink, or a KV
  // cache larger than the bound by itself).
  Admit submit(GenerationJob job);
  // Refuses new jobs, lets the running and queued ones go on for up to `drain_s` seconds, then
  // finishes the rest with kCancelled; joins the thread. Idempotent.
  void stop(double drain_s);
  // Called after every step, on the batcher's thread.
  void set_step_observer(std::function<void(const StepInfo&)> observer);
  BatcherSnapshot snapshot() const;
  const BatcherOptions& options() const { return options_; }

 private:
  struct Running;
  // A finished sequence kept for prefix caching: the tokens its KV cache holds.
  struct Cached {
    int sequence = -1;
    std::vector<std::int32_t> tokens;
    std::uint64_t bytes = 0;  // its KV reservation when it ran (an upper bound of what it holds)
  };
  void loop();
  // Opens the job's sequence, reusing the cached one that shares the longest prefix with its prompt.
  void open(Running& r);
  // Closes cached sequences, oldest first, until at most `keep` remain and, under a KV bound, they
  // fit beside the running sequences' reservations.
  void trim_cache(std::size_t keep);
  void run_step(std::vector<Running>& running);
  // Closes the job's sequence (if open) and tells its sink; the loop drops it before the next step.
  void finish(Running& r, FinishReason why, const std::string& error);

  MoeEngine& engine_;
  BatcherOptions options_;
  std::unique_ptr<StepScheduler> scheduler_;  // the batcher's thread's only, but refusal() (const) at submit
  std::function<void(const StepInfo&)> observer_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<GenerationJob> queue_;
  std::deque<Cached> cache_;  // the batcher's thread's only; oldest first
  // run_step()'s buffers, kept from step to step (the batcher's thread's only).
  std::vector<RunningSequence> step_states_;
  std::vector<MoeEngine::SequenceInput> step_inputs_;
  std::vector<std::size_t> step_who_;
  bool stopping_ = false;
  double deadline_s_ = 0;  // steady clock: cancel what still runs after this, once stopping
  BatcherSnapshot snapshot_;
  std::thread thread_;
};

}  // namespace ferry::moe
