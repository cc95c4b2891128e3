// WFBP, wait-free back-propagation (Zhang et al. 2017, Poseidon), with tensor fusion
// (Horovod) and front-layers-first completion (priority, as in ByteScheduler / P3):
// an autograd hook on every parameter hands its gradient to communication the moment
// backward produces it. Gradients are fused, in the reverse layer order in which they become
// ready, into buckets of about bucket_mb MB (its spec's key, wfbp:bucket_mb=4; wfbp_options.h); a full bucket is sent at once on the
// communication thread (allreduce: an allreduce of the bucket; ps: a push of its keys and a
// pull of their version t+1), overlapping the backward of the layers in front of it. step()
// sends what is left and returns; each bucket completes (wait, then update its weights) when
// the next forward enters the first layer whose parameters it holds (layer_gate()), so the
// communication of the back layers also overlaps the forward of the front layers, which come
// first. The arithmetic is S-SGD's: w ← w − η·Opt((1/N) Σ_i g_i), bucket by bucket.
// A bucket whose sum is not finite is skipped on every worker (allreduce; the PS skips per key).
//
// The hook sees each parameter's gradient once per backward (true of every model here); a
// parameter whose hook did not fire (unused in the graph) is sent from the gradient buffer in
// step().
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <optional>
#include <vector>

#include "ps/key_layout.h"
#include "ps/kv_worker.h"
#include "ps/sgd_optimizer.h"
#include "train/comm_thread.h"
#include "train/wfbp_options.h"
#include "train/strategy.h"

namespace ferry::train {

class WfbpStrategy final : public Strategy {
 public:
  explicit WfbpStrategy(const StrategyContext& context);
  ~WfbpStrategy() override;
  std::string name() const override { return "wfbp"; }
  void setup(FlatParams& params) override;
  void step(FlatParams& params, std::int64_t iteration) override;
  std::function<void(std::size_t, std::size_t)> layer_gate() override;
  void complete(FlatParams& params) override;
  void skip_step(FlatParams& params, std::int64_t iteration) override;
  void finish(FlatParams& params) override;
  void save_state(StateWriter& out, FlatParams& params, std::int64_t iterations) override;
  void load_state(const StateReader& in, FlatParams& params) override;

  // Number of fusion buckets (for tests and logs).
  std::size_t num_buckets() const { return buckets_.size(); }

 private:
  struct Bucket {
    std::size_t begin = 0, end = 0;  // flat range [begin, end)
    std::vector<std::size_t> params;  // parameter indices, in the order they become ready
    std::vector<int> keys;            // ps: keys inside the range
    std::size_t pending = 0;          // parameters whose gradient has not arrived this iteration
    std::optional<comm::Ticket> sent;     // the comm-thread task of this iteration
    std::optional<comm::Ticket> in_flight;  // ps: the pushes and pulls that task started
    std::unique_ptr<ps::SgdOptimizer> optimizer;  // allreduce: this bucket's optimizer
  };
  void on_grad(std::size_t param, const at::Tensor& grad);
  void launch(std::size_t bucket);
  // Waits for `bucket`'s communication of the last step, if any, and updates its weights.
  void complete_bucket(std::size_t bucket);
  void remove_hooks();

  StrategyContext context_;
  WfbpOptions options_;
  FlatParams* params_ = nullptr;  // set in setup(); the caller keeps it alive until finish()
  std::vector<Bucket> buckets_;   // back layers first
  std::vector<std::size_t> bucket_of_;  // by parameter index
  std::vector<bool> ready_;             // by parameter index, this iteration
  std::vector<float> fused_;            // fusion buffer, flat layout
  std::vector<float> pulled_;           // ps: pulled weights
  std::unique_ptr<ps::KeyLayout> layout_;
  std::unique_ptr<ps::KVWorker> kv_;
  std::vector<std::pair<at::Tensor, unsigned>> hooks_;  // (parameter, hook handle)
  std::int64_t steps_ = 0;
  bool gated_ = false;  // layer_gate() was taken: buckets complete in the next forward
  CommThread thread_;  // last member: joined first
};

}  // namespace ferry::train
