// Reading a strategy's options from a whole --algo spec: the one body behind every
// XOptions::of_spec() (local_sgd_options.h, wfbp_options.h, diloco_options.h).
#pragma once

#include <string>
#include <utility>

#include "core/spec.h"

namespace ferry::train {

// `read(SpecReader&)` applied to `algo_spec`; a key it did not ask for is an InvalidArgument
// naming --algo and listing the strategy's keys.
template <class Read>
auto read_algo_spec(const std::string& algo_spec, Read&& read) {
  SpecReader r(Spec::parse(algo_spec, "--algo"), "--algo");
  auto options = std::forward<Read>(read)(r);
  r.finish();
  return options;
}

}  // namespace ferry::train
