// ASGD (Hogwild-style asynchronous SGD on a parameter server, MXNet dist_async): every worker
// pushes g_i(w_stale) and pulls whatever the server holds now; the server applies each push
// on arrival,  w ← w − η · Opt(g_i / N). No worker waits for another, at the price of
// gradients computed on stale weights. With a codec the pushes travel compressed, one codec per
// key (gradient_codecs.h); the server decodes each push and applies it. With a codec with error
// feedback each worker keeps its own velocity and pushes C(u_i) (worker_momentum.h), the server
// applying w <- w - lr decode(C(u_i)) / N without momentum.
#pragma once

#include <memory>

#include "ps/key_layout.h"
#include "ps/kv_worker.h"
#include "train/gradient_codecs.h"
#include "train/strategy.h"
#include "train/worker_momentum.h"

namespace ferry::train {

class AsgdStrategy final : public Strategy {
 public:
  explicit AsgdStrategy(const StrategyContext& context);
  std::string name() const override { return "asgd"; }
  void setup(FlatParams& params) override;
  void step(FlatParams& params, std::int64_t iteration) override;
  void skip_step(FlatParams& params, std::int64_t iteration) override;
  void finish(FlatParams& params) override;
  void save_state(StateWriter& out, FlatParams& params, std::int64_t iterations) override;
  void load_state(const StateReader& in, FlatParams& params) override;

 private:
  StrategyContext context_;
  std::unique_ptr<ps::KeyLayout> layout_;
  std::unique_ptr<ps::KVWorker> kv_;
  std::unique_ptr<KeyPushCodecs> push_codecs_;  // with a codec
  std::unique_ptr<WorkerMomentum> momentum_;    // momentum on the worker (codec with error feedback)
  std::int64_t pushes_ = 0;
};

}  // namespace ferry::train
