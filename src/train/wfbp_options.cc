#include "train/wfbp_options.h"


#include "core/error.h"
#include "train/algo_spec.h"

namespace ferry::train {

WfbpOptions WfbpOptions::read(SpecReader& r) {
  WfbpOptions o;
  o.bucket_mb = r.get_double("bucket_mb", o.bucket_mb);
  FERRY_REQUIRE_POSITIVE(o.bucket_mb, "--algo ", r.name(), ": bucket_mb");
  return o;
}

WfbpOptions WfbpOptions::of_spec(const std::string& algo_spec) { return read_algo_spec(algo_spec, read); }

}  // namespace ferry::train
