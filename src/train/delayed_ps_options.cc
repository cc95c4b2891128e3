#include "train/delayed_ps_options.h"

#include <sstream>

#include "core/error.h"
#include "train/algo_spec.h"

namespace ferry::train {

DelayedPsOptions DelayedPsOptions::read(SpecReader& r) {
  DelayedPsOptions o;
  o.warmup_steps = r.get_int("warmup_steps", o.warmup_steps);
  FERRY_REQUIRE_OP(o.warmup_steps, >=, 0, "--algo ", r.name(), ": warmup_steps");
  o.lr_local = static_cast<float>(r.get_double("lr_local", o.lr_local));
  FERRY_REQUIRE_OP(o.lr_local, >=, 0, "--algo ", r.name(), ": lr_local (0: the global --lr)");
  o.lr_warmup_steps = r.get_int("lr_warmup_steps", o.lr_warmup_steps);
  FERRY_REQUIRE_OP(o.lr_warmup_steps, >=, 0, "--algo ", r.name(), ": lr_warmup_steps");
  return o;
}

DelayedPsOptions DelayedPsOptions::of_spec(const std::string& algo_spec) { return read_algo_spec(algo_spec, read); }

SsdSgdOptions SsdSgdOptions::read(SpecReader& r) {
  SsdSgdOptions o;
  o.delayed = DelayedPsOptions::read(r);
  o.delay_steps = r.get_int("delay_steps", o.delay_steps);
  FERRY_REQUIRE_GE(o.delay_steps, 1, "--algo ", r.name(), ": delay_steps");
  const std::string update = r.get_string("local_update", "glu");
  FERRY_REQUIRE(update == "glu" || update == "sgd", "--algo ", r.name(), ": local_update must be glu or sgd, got '",
                update, "'");
  o.glu = update == "glu";
  o.glu_coef = static_cast<float>(r.get_double("glu_coef", o.glu_coef));
  FERRY_REQUIRE_OP(o.glu_coef, >=, 0, "--algo ", r.name(), ": glu_coef");
  return o;
}

SsdSgdOptions SsdSgdOptions::of_spec(const std::string& algo_spec) { return read_algo_spec(algo_spec, read); }

CdSgdOptions CdSgdOptions::read(SpecReader& r) {
  CdSgdOptions o;
  o.delayed = DelayedPsOptions::read(r);
  o.correction_steps = r.get_int("correction_steps", o.correction_steps);
  FERRY_REQUIRE_GE(o.correction_steps, 1, "--algo ", r.name(), ": correction_steps");
  o.threshold = static_cast<float>(r.get_double("threshold", 0.005));  // the double, printed as 0.005
  FERRY_REQUIRE_POSITIVE(o.threshold, "--algo ", r.name(), ": threshold");
  return o;
}

CdSgdOptions CdSgdOptions::of_spec(const std::string& algo_spec) { return read_algo_spec(algo_spec, read); }

std::string CdSgdOptions::default_codec() const {
  std::ostringstream s;
  s << "twobit:threshold=" << threshold;
  return s.str();
}

}  // namespace ferry::train
