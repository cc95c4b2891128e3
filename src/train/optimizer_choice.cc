#include "train/optimizer_choice.h"

#include "core/error.h"
#include "core/spec.h"

namespace ferry::train {
namespace {

OptimizerChoice read_optimizer(SpecReader& r) {
  OptimizerChoice o;
  FERRY_REQUIRE(r.name() == "sgd" || r.name() == "adamw", "unknown --optimizer '", r.name(), "' (known: sgd, adamw)");
  if (r.name() == "adamw") {
    o.kind = OptimizerKind::kAdamW;
    o.beta1 = r.get_double("beta1", o.beta1);
    o.beta2 = r.get_double("beta2", o.beta2);
    o.eps = r.get_double("eps", o.eps);
    FERRY_REQUIRE_IN(o.beta1, 0, 1, "[)", "--optimizer adamw: beta1");
    FERRY_REQUIRE_IN(o.beta2, 0, 1, "[)", "--optimizer adamw: beta2");
    FERRY_REQUIRE_FINITE(o.eps, >, 0, "--optimizer adamw: eps");
  }
  r.finish();
  return o;
}

}  // namespace

OptimizerChoice OptimizerChoice::of_spec(const std::string& spec) {
  SpecReader r(Spec::parse(spec, "--optimizer"), "--optimizer");
  return read_optimizer(r);
}

float OptimizerChoice::default_lr() const { return kind == OptimizerKind::kAdamW ? 4e-4f : 0.05f; }

float OptimizerChoice::default_weight_decay() const { return kind == OptimizerKind::kAdamW ? 0.1f : 0.0f; }

std::string canonical_optimizer(const std::string& spec) {
  SpecReader r(Spec::parse(spec, "--optimizer"), "--optimizer");
  read_optimizer(r);
  return r.canonical();
}

}  // namespace ferry::train
