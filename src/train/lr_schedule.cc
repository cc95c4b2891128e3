#include "train/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/error.h"
#include "core/spec.h"

namespace ferry::train {
namespace {

LrSchedule read_schedule(SpecReader& r) {
  LrSchedule s;
  FERRY_REQUIRE(r.name() == "constant" || r.name() == "cosine", "unknown --lr-schedule '", r.name(),
                "' (known: constant, cosine)");
  s.kind = r.name() == "cosine" ? LrSchedule::Kind::kCosine : LrSchedule::Kind::kConstant;
  s.warmup_steps = r.get_int("warmup_steps", s.warmup_steps);
  FERRY_REQUIRE_OP(s.warmup_steps, >=, 0, "--lr-schedule ", r.name(), ": warmup_steps");
  if (s.kind == LrSchedule::Kind::kCosine) {
    s.min_ratio = r.get_double("min_ratio", s.min_ratio);
    FERRY_REQUIRE_IN(s.min_ratio, 0, 1, "[]", "--lr-schedule cosine: min_ratio");
    s.steps = r.get_int("steps", s.steps);
    FERRY_REQUIRE_OP(s.steps, >=, 0, "--lr-schedule cosine: steps");
    FERRY_REQUIRE(s.steps == 0 || s.steps > s.warmup_steps, "--lr-schedule cosine: steps (", s.steps,
                  ") must exceed warmup_steps (", s.warmup_steps, "): the decay starts after the warm-up");
  }
  r.finish();
  return s;
}

}  // namespace

LrSchedule LrSchedule::of_spec(const std::string& spec) {
  SpecReader r(Spec::parse(spec, "--lr-schedule"), "--lr-schedule");
  return read_schedule(r);
}

float LrSchedule::lr_at(float base, std::int64_t t) const {
  if (t < warmup_steps) return static_cast<float>(double(base) * double(t + 1) / double(warmup_steps));
  if (kind == Kind::kConstant) return base;
  const double p = std::min(1.0, double(t - warmup_steps) / double(steps - warmup_steps));
  const double floor = min_ratio * double(base);
  return static_cast<float>(floor + 0.5 * (double(base) - floor) * (1.0 + std::cos(std::numbers::pi * p)));
}

std::string canonical_lr_schedule(const std::string& spec, std::int64_t max_steps) {
  Spec parsed = Spec::parse(spec, "--lr-schedule");
  SpecReader r(parsed, "--lr-schedule");
  const LrSchedule s = read_schedule(r);
  if (s.kind != LrSchedule::Kind::kCosine || s.steps > 0) return r.canonical();
  FERRY_REQUIRE(max_steps > 0, "--lr-schedule cosine decays over --max-steps: give --max-steps or cosine:steps=N");
  std::erase_if(parsed.params, [](const auto& kv) { return kv.first == "steps"; });
  parsed.params.emplace_back("steps", std::to_string(max_steps));
  SpecReader resolved(parsed, "--lr-schedule");
  read_schedule(resolved);
  return resolved.canonical();
}

}  // namespace ferry::train
