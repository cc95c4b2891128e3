// The engine shared by the delayed parameter-server algorithms (OD-SGD, SSD-SGD, CD-SGD; see
// od_sgd_strategy.h, ssd_sgd_strategy.h, cd_sgd_strategy.h and docs/algorithms.md). A worker
// keeps its LOCAL weights (the model, in FlatParams) apart from the last GLOBAL weights it
// pulled (a buffer of its own), and a CommThread pushes and pulls in the background.
//
//   warm-up, t < W:  plain S-SGD: push g(t), pull version t+1, wait; local = global.
//   t >= W:          if a pull is pending (launched after iteration t-1), wait for it and
//                    REPLACE the local weights by it (version t);
//                    push g(t) in the background (compressed unless a full-precision step);
//                    after iterations W+k-1, W+2k-1, ... launch a pull of version t+1;
//                    w_local ← w_local − η_l·Opt_l(g(t)) [+ c·(w_last − w_prev)/Δ with GLU]
// where Opt_l is SGD with momentum on a local velocity buffer (η_l = lr_local, ramped over
// lr_warmup_steps; delayed_ps_options.h), w_prev / w_last are the two most recent pulled global weights and Δ the
// number of server updates between them. The server runs plain sync mode: it sums the i-th
// push of every worker and steps the global optimizer. With a codec with error feedback the
// global optimizer's momentum and weight decay move to the workers (worker_momentum.h): every
// push, compressed or fp32 (warm-up, k-step correction), carries this worker's velocity
// u <- m u + g + wd w, updated on the communication thread in push order, and the server steps
// without momentum. The local step keeps its own velocity on the full-precision gradient.
#pragma once

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ps/key_layout.h"
#include "ps/kv_worker.h"
#include "ps/sgd_optimizer.h"
#include "train/comm_thread.h"
#include "train/delayed_ps_options.h"
#include "train/gradient_codecs.h"
#include "train/strategy.h"
#include "train/worker_momentum.h"

namespace ferry::train {

// What distinguishes the delayed algorithms.
struct DelayedPsSchedule {
  DelayedPsOptions delayed;      // W, the local lr and its ramp
  int pull_every = 1;            // k: pull after iterations W+k-1, W+2k-1, ... (1: every iteration)
  bool glu = false;              // add the global direction of the last two pulls to local steps
  float glu_coef = 0.5f;         // its weight c
  std::string codec = "none";    // codec of the post-warm-up pushes ("none": fp32)
  int full_precision_every = 0;  // with a codec: iterations W+k-1, W+2k-1, ... push fp32 (0: never)
};

class DelayedPsStrategy : public Strategy {
 public:
  DelayedPsStrategy(const StrategyContext& context, std::string name, DelayedPsSchedule schedule);
  ~DelayedPsStrategy() override;
  std::string name() const override { return name_; }
  void setup(FlatParams& params) override;
  void step(FlatParams& params, std::int64_t iteration) override;
  void skip_step(FlatParams& params, std::int64_t iteration) override;
  void finish(FlatParams& params) override;
  void save_state(StateWriter& out, FlatParams& params, std::int64_t iterations) override;
  void load_state(const StateReader& in, FlatParams& params) override;

 private:
  enum class PushKind { kFull, kCompressed, kSkip };
  void run_step(FlatParams& params, std::int64_t iteration, bool finite);
  void warmup_step(FlatParams& params, std::int64_t t, bool finite);
  void delayed_step(FlatParams& params, std::int64_t t, bool finite);
  // Queues a push of a copy of `grad` (fp32, through the codec, or a skip push without it); at
  // most kMaxPushesInFlight stay queued. `weights`: this worker's weights now (weight decay on
  // the worker).
  void launch_push(std::span<const float> grad, std::span<const float> weights, PushKind kind);
  // Remembers pulled global weights of `version` (for GLU).
  void record_pull(std::span<const float> weights, std::uint64_t version);
  float local_lr(std::int64_t t) const;

  static constexpr std::size_t kMaxPushesInFlight = 2;

  StrategyContext context_;
  std::string name_;
  DelayedPsSchedule schedule_;
  std::int64_t warmup_ = 0;
  float lr_local_ = 0;
  std::unique_ptr<ps::KeyLayout> layout_;
  std::unique_ptr<ps::KVWorker> kv_;
  std::unique_ptr<KeyPushCodecs> push_codecs_;  // post-warm-up compressed pushes
  std::unique_ptr<WorkerMomentum> momentum_;    // the global momentum on the worker; comm thread only
  std::unique_ptr<ps::SgdOptimizer> local_opt_;
  std::vector<float> pulled_;                   // global weights, written by the comm thread
  std::optional<comm::Ticket> pending_pull_;    // the pull into pulled_ in flight
  std::uint64_t pending_version_ = 0;
  std::deque<comm::Ticket> pushes_;             // pushes in flight, oldest first
  std::vector<float> last_pull_;                // GLU: the latest pulled global weights
  std::uint64_t last_pull_version_ = 0;
  std::vector<float> glu_dir_;                  // GLU: (w_last − w_prev) / Δ
  bool have_glu_ = false;
  std::int64_t steps_ = 0;
  CommThread thread_;  // last member: joined first, before the buffers its tasks use go away
};

}  // namespace ferry::train
