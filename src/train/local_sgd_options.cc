#include "train/local_sgd_options.h"

#include "core/error.h"
#include "train/algo_spec.h"

namespace ferry::train {

LocalSgdOptions LocalSgdOptions::read(SpecReader& r) {
  LocalSgdOptions o;
  o.sync_every = r.get_int("sync_every", o.sync_every);
  FERRY_REQUIRE_GE(o.sync_every, 1, "--algo ", r.name(), ": sync_every");
  o.post_local = r.get_int("post_local", o.post_local);
  FERRY_REQUIRE_OP(o.post_local, >=, 0, "--algo ", r.name(), ": post_local");
  return o;
}

LocalSgdOptions LocalSgdOptions::of_spec(const std::string& algo_spec) { return read_algo_spec(algo_spec, read); }

}  // namespace ferry::train
