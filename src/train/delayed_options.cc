#include "train/delayed_options.h"

#include <cmath>
#include <sstream>

#include "compress/codec_registry.h"
#include "core/error.h"
#include "train/strategy.h"

namespace ferry::train {

void validate_delayed_options(const DelayedOptions& o) {
  FERRY_REQUIRE(o.warmup_steps >= 0, "--warmup-steps must be >= 0, got ", o.warmup_steps);
  FERRY_REQUIRE(o.lr_local >= 0 && std::isfinite(o.lr_local), "--lr-local must be >= 0 (0: the global --lr), got ", o.lr_local);
  FERRY_REQUIRE(o.lr_warmup_steps >= 0, "--lr-warmup-steps must be >= 0, got ", o.lr_warmup_steps);
  FERRY_REQUIRE_GE(o.delay_steps, 1, "--delay-steps");
  FERRY_REQUIRE(o.local_update == "glu" || o.local_update == "sgd", "--local-update must be glu or sgd, got '",
                o.local_update, "'");
  FERRY_REQUIRE(o.glu_coef >= 0 && std::isfinite(o.glu_coef), "--glu-coef must be >= 0, got ", o.glu_coef);
  FERRY_REQUIRE_GE(o.correction_steps, 1, "--correction-steps");
  FERRY_REQUIRE(o.threshold > 0 && std::isfinite(o.threshold), "--threshold must be positive, got ", o.threshold);
}

void validate_algorithm_codec(const StrategyInfo& info, const std::string& codec) {
  const std::string& algo = info.name;
  if (!info.takes_codec)
    FERRY_REQUIRE(compress::codec_entry(codec).identity, "--algo ", algo,
                  " does not compress (it sends fp32); drop --codec ", codec);
}

std::string cdsgd_default_codec(const DelayedOptions& o) {
  std::ostringstream s;
  s << "twobit:threshold=" << o.threshold;
  return s.str();
}

}  // namespace ferry::train
