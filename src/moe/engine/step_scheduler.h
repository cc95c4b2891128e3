// The step scheduler of continuous batching: which waiting requests join the running batch, and how
// many tokens each running sequence feeds in the next step. The ContinuousBatcher owns the loop:
//
//   submit:     refusal(shape)         -- can this request ever run? (else the client hears why)
//   each step:  admit(shape, running)  -- oldest waiting request first, again while it says yes;
//                                         a yes reserves the request's KV memory
//               plan(running)          -- tokens per running sequence (decode 1, a prompt chunk, or 0)
//               ... the engine's step ...
//   leave:      release(shape)         -- finished, stopped, cancelled or failed: memory free again
//
// (The interface follows vLLM's scheduler, whose methods are placed in the same loop; ferry's
// reserves a sequence's whole KV cache at admission, as Orca does, instead of paging it.)
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "moe/model/config.h"

namespace ferry::moe {

// A request as the scheduler sees it.
struct RequestShape {
  std::int64_t prompt_tokens = 0;   // at least one
  std::int64_t max_new_tokens = 0;  // at least one
};

// A running sequence at a step boundary.
struct RunningSequence {
  std::int64_t prompt_left = 0;  // prompt tokens not yet through the engine; 0: decoding
};

class StepScheduler {
 public:
  virtual ~StepScheduler() = default;
  // Empty when the request can run once enough others have left; else one line saying which bound
  // it alone exceeds.
  virtual std::string refusal(const RequestShape& request) const = 0;
  // Whether the request joins now, `running` sequences being in the batch. A yes reserves its memory.
  virtual bool admit(const RequestShape& request, int running) = 0;
  // Tokens each running sequence (in batch order) feeds in the next step; 0 sits the step out.
  virtual std::vector<std::int64_t> plan(std::span<const RunningSequence> running) const = 0;
  // The request left the batch; what admit() reserved for it is free again.
  virtual void release(const RequestShape& request) = 0;
  // The positions the request's sequence may reach (its KV cache's limit).
  virtual std::int64_t max_positions(const RequestShape& request) const = 0;
  // KV bytes reserved by the admitted requests now.
  virtual std::uint64_t kv_reserved_bytes() const = 0;
};

struct FcfsSchedulerOptions {
  int max_batch = 16;           // sequences in one step (decoding or in prefill)
  int prefill_chunk = 32;       // prompt tokens per step, over every sequence still in prefill
  std::uint64_t kv_bytes = 0;   // KV cache memory of the running sequences together; 0: unbounded
};

// First come, first served, with chunked prefill (Agrawal et al., "Sarathi", 2023): every decoding
// sequence feeds one token per step; the sequences in prefill share `prefill_chunk` prompt tokens,
// oldest first. A request joins while the batch has a free slot and its KV cache
// (kv_cache_bytes(prompt + max_new_tokens - 1 positions), capped at max_position_embeddings) fits
// beside the reservations of the running ones; a later request never overtakes a waiting one.
std::unique_ptr<StepScheduler> make_fcfs_scheduler(const FcfsSchedulerOptions& options, const MoeConfig& config);

}  // namespace ferry::moe
