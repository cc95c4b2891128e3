// DiLoCo (Douillard et al. 2023, "DiLoCo: Distributed Low-Communication Training of Language
// Models", arXiv 2311.08105) and Streaming DiLoCo (Douillard et al. 2025, "Streaming DiLoCo with
// overlapping communication", arXiv 2501.18512).
//
// DiLoCo: every worker i starts an outer step from the global weights θ, runs H inner steps of
// its own inner optimizer (AdamW or SGD with momentum; its state stays on the worker) to θ_i, and
// the outer gradient, the mean over workers of what they moved,
//   Δ = (1/N) Σ_i (θ − θ_i),
// is averaged by an allreduce (compressed by the --codec, with its error feedback, when one is
// given). The outer optimizer, SGD with Nesterov momentum as in the paper (PyTorch's form),
//   u = μ·u + Δ,   θ ← θ − η_out·(Δ + μ·u)      (nesterov=0: θ ← θ − η_out·u),
// gives the new global weights, which every worker continues from.
//
// Streaming DiLoCo: the parameters are split into P fragments (consecutive tensors, balanced by
// size); fragment p is synchronised every H steps at offset o_p = ⌊p·H/P⌋, after inner step s
// with s ≥ H and s ≡ o_p (mod H), so its traffic is spread over the window. Its outer gradient
// Δ_p = θ_p − θ_{i,p} is sent at s while τ more inner steps run (overlap, on a communication
// thread); after step s + τ the outer optimizer gives the new global fragment θ_p, and the local
// one is mixed with it:
//   θ_{i,p} ← α·θ_{i,p} + (1 − α)·θ_p .
// One fragment, τ = 0 and α = 0 is DiLoCo. finish() synchronises every fragment with local
// steps since its last synchronisation and leaves the global weights in the model.
//
// Warm start (warm_start_steps = N): iterations 0..N−1 are S-SGD, every worker stepping the inner
// optimizer on the mean gradient (an fp32 allreduce, the skip of a non-finite one as S-SGD's), so
// that they equal an S-SGD run with that optimizer bit for bit; DiLoCo then starts from those
// weights (θ = the weights after iteration N−1, the outer momentum zero) and its inner step counts
// from there. The inner optimizer's state carries over, as the paper's runs continue a pretrained
// model's training: every worker starts its inner steps with S-SGD's velocity or moments, and
// the learning-rate schedule (lr_schedule.h) runs on over the whole run's iterations.
//
// The inner optimizer is the run's --optimizer (worker_optimizer.h; AdamW by default, the paper's).
// Options are the keys of the --algo spec (canonical_algo): "diloco:inner_steps=50,outer_lr=0.7".
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "train/comm_thread.h"
#include "train/diloco_options.h"
#include "train/gradient_codecs.h"
#include "train/strategy.h"
#include "train/worker_optimizer.h"

namespace ferry::train {

// The registry entries "diloco" and "streaming-diloco" (registered by register_builtin_strategies).
StrategyInfo diloco_entry(bool streaming);

class DilocoStrategy final : public Strategy {
 public:
  DilocoStrategy(const StrategyContext& context, bool streaming);
  ~DilocoStrategy() override;
  std::string name() const override { return streaming_ ? "streaming-diloco" : "diloco"; }
  void setup(FlatParams& params) override;
  void step(FlatParams& params, std::int64_t iteration) override;
  void skip_step(FlatParams& params, std::int64_t iteration) override;
  void finish(FlatParams& params) override;
  void save_state(StateWriter& out, FlatParams& params, std::int64_t iterations) override;
  void load_state(const StateReader& in, FlatParams& params) override;

  const DilocoOptions& options() const { return options_; }

 private:
  struct Fragment {
    std::size_t begin = 0, end = 0;  // elements of the flat vector
    std::size_t first_tensor = 0, end_tensor = 0;
    std::int64_t offset = 0;      // o_p
    std::int64_t last_sync = 0;   // inner steps done at its last synchronisation
    // An outer gradient in flight: sent after step sent_at, applied after step sent_at + τ.
    bool pending = false;
    std::int64_t sent_at = 0;
    comm::Ticket ticket;
  };

  void warm_step(FlatParams& params, std::int64_t iteration);  // S-SGD (warm start)
  void inner_step(FlatParams& params, std::int64_t iteration, bool finite);
  void after_step(FlatParams& params);
  void send(FlatParams& params, Fragment& f);
  void take_delta(FlatParams& params, Fragment& f);  // Δ_f = θ_f − θ_{i,f}; the fragment's sync is now
  void exchange_and_apply(FlatParams& params, Fragment& f, double alpha);  // at once (no overlap)
  void apply(FlatParams& params, Fragment& f, double alpha);
  void exchange(Fragment& f);  // Δ_f summed over the workers, on the comm thread when τ > 0
  void wait_all();

  StrategyContext context_;
  bool streaming_;
  DilocoOptions options_;
  std::unique_ptr<WorkerOptimizer> inner_;  // none with an external optimizer
  std::unique_ptr<TensorAllreduceCodecs> codecs_;
  std::vector<float> global_;    // θ
  std::vector<float> velocity_;  // the outer optimizer's u
  std::vector<float> delta_;     // this worker's Δ, then the sum over workers
  std::vector<Fragment> fragments_;
  std::int64_t steps_ = 0;  // inner steps done (after the warm start)
  CommThread comm_thread_;  // τ > 0
};

}  // namespace ferry::train
