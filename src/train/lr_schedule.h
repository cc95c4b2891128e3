// Learning-rate schedules, chosen by the --lr-schedule spec (core/spec.h):
//
//   constant[:warmup_steps=W]
//   cosine[:warmup_steps=W,min_ratio=r,steps=T]
//
// At iteration t (0-based) with the base learning rate η (--lr):
//
//   warm-up, t < W:  η_t = η · (t + 1) / W                       (linear; the last warm-up step at η)
//   constant:        η_t = η
//   cosine:          p = min(1, (t − W) / (T − W))
//                    η_t = η_min + ½ (η − η_min) (1 + cos(π p)),   η_min = r · η
//
// The cosine is SGDR's annealing (Loshchilov & Hutter 2017, "SGDR: Stochastic Gradient Descent
// with Warm Restarts", eq. 5) over one period of T − W iterations, without restarts, and stays at
// η_min after T. Linear warm-up then cosine decay is the DiLoCo paper's inner schedule (Douillard
// et al. 2023, arXiv 2311.08105, Table 5: 1,000 warm-up steps, cosine decay); r = 0.1 (the default)
// decays to a tenth of the peak as Chinchilla's schedule does (Hoffmann et al. 2022), which the
// paper's models follow. T defaults to the run's --max-steps.
//
// The schedule scales the optimizer a worker steps itself (worker_optimizer.h): S-SGD on allreduce,
// local SGD, DiLoCo's inner optimizer, compute-only. The lr is a function of the iteration alone,
// so a resumed run continues on it.
#pragma once

#include <cstdint>
#include <string>

namespace ferry::train {

struct LrSchedule {
  enum class Kind { kConstant, kCosine };
  Kind kind = Kind::kConstant;
  std::int64_t warmup_steps = 0;  // W
  double min_ratio = 0.1;         // r: cosine's floor as a fraction of --lr
  std::int64_t steps = 0;         // T: cosine reaches its floor at this iteration; 0 = --max-steps

  // Reads a --lr-schedule spec; InvalidArgument naming --lr-schedule and the key for a bad one.
  static LrSchedule of_spec(const std::string& spec);
  // False for the constant schedule without warm-up (the lr never changes).
  bool varies() const { return kind != Kind::kConstant || warmup_steps > 0; }
  // η_t for the base learning rate `base` (exactly `base` where the schedule is flat at it).
  float lr_at(float base, std::int64_t iteration) const;
};

// The spec with every key resolved ("cosine" and --max-steps 2000 ->
// "cosine:warmup_steps=0,min_ratio=0.1,steps=2000"); InvalidArgument naming --lr-schedule for a
// bad spec, and for a cosine without steps= when `max_steps` is 0 (it decays over a known length).
std::string canonical_lr_schedule(const std::string& spec, std::int64_t max_steps);

}  // namespace ferry::train
