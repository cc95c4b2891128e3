#include "moe/engine/step_scheduler.h"

#include <algorithm>

#include "core/error.h"
#include "core/units.h"
#include "moe/engine/kv_cache.h"

namespace ferry::moe {
namespace {

class FcfsScheduler : public StepScheduler {
 public:
  FcfsScheduler(const FcfsSchedulerOptions& options, const MoeConfig& config) : options_(options), config_(config) {
    FERRY_REQUIRE_GE(options_.max_batch, 1, "--max-batch");
    FERRY_REQUIRE_GE(options_.prefill_chunk, 1, "--prefill-chunk");
  }

  std::string refusal(const RequestShape& r) const override {
    if (options_.kv_bytes == 0 || kv_bytes(r) <= options_.kv_bytes) return "";
    return "the request needs " + format_bytes(static_cast<double>(kv_bytes(r))) + " of KV cache (" +
           std::to_string(max_positions(r)) + " positions), more than the bound of " +
           format_bytes(static_cast<double>(options_.kv_bytes));
  }

  bool admit(const RequestShape& r, int running) override {
    if (running >= options_.max_batch) return false;
    if (options_.kv_bytes > 0 && reserved_ + kv_bytes(r) > options_.kv_bytes) return false;
    reserved_ += kv_bytes(r);
    return true;
  }

  std::vector<std::int64_t> plan(std::span<const RunningSequence> running) const override {
    std::vector<std::int64_t> tokens;
    std::int64_t prefill_left = options_.prefill_chunk;
    for (const auto& s : running) {
      if (s.prompt_left == 0) {
        tokens.push_back(1);
      } else {
        const std::int64_t n = std::min(prefill_left, s.prompt_left);
        tokens.push_back(n);
        prefill_left -= n;
      }
    }
    return tokens;
  }

  void release(const RequestShape& r) override {
    FERRY_CHECK(reserved_ >= kv_bytes(r), "release of a request that was not admitted");
    reserved_ -= kv_bytes(r);
  }

  std::int64_t max_positions(const RequestShape& r) const override {
    return std::min<std::int64_t>(r.prompt_tokens + r.max_new_tokens - 1, config_.max_position_embeddings);
  }

  std::uint64_t kv_reserved_bytes() const override { return reserved_; }

 private:
  std::uint64_t kv_bytes(const RequestShape& r) const { return kv_cache_bytes(config_, max_positions(r)); }

  FcfsSchedulerOptions options_;
  MoeConfig config_;
  std::uint64_t reserved_ = 0;
};

}  // namespace

std::unique_ptr<StepScheduler> make_fcfs_scheduler(const FcfsSchedulerOptions& options, const MoeConfig& config) {
  return std::make_unique<FcfsScheduler>(options, config);
}

}  // namespace ferry::moe
