#include "train/wfbp_options.h"

#include <cmath>

#include "core/error.h"
#include "train/algo_spec.h"

namespace ferry::train {

WfbpOptions WfbpOptions::read(SpecReader& r) {
  WfbpOptions o;
  o.bucket_mb = r.get_double("bucket_mb", o.bucket_mb);
  FERRY_REQUIRE(o.bucket_mb > 0 && std::isfinite(o.bucket_mb), "--algo ", r.name(), ": bucket_mb must be positive, got ",
                o.bucket_mb);
  return o;
}

WfbpOptions WfbpOptions::of_spec(const std::string& algo_spec) { return read_algo_spec(algo_spec, read); }

}  // namespace ferry::train
