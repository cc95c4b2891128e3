#include "train/diloco_options.h"

#include "core/error.h"
#include "train/algo_spec.h"

namespace ferry::train {

DilocoOptions DilocoOptions::read(SpecReader& r, bool streaming) {
  DilocoOptions o;
  o.inner_steps = r.get_int("inner_steps", o.inner_steps);
  FERRY_REQUIRE_GE(o.inner_steps, 1, "--algo ", r.name(), ": inner_steps");
  o.outer_lr = r.get_double("outer_lr", o.outer_lr);
  FERRY_REQUIRE_FINITE(o.outer_lr, >, 0, "--algo ", r.name(), ": outer_lr");
  o.outer_momentum = r.get_double("outer_momentum", o.outer_momentum);
  FERRY_REQUIRE_IN(o.outer_momentum, 0, 1, "[)", "--algo ", r.name(), ": outer_momentum");
  o.nesterov = r.get_bool("nesterov", o.nesterov);
  o.warm_start_steps = r.get_int("warm_start_steps", o.warm_start_steps);
  FERRY_REQUIRE_OP(o.warm_start_steps, >=, 0, "--algo ", r.name(), ": warm_start_steps");
  o.inner_lr_scale = r.get_double("inner_lr_scale", o.inner_lr_scale);
  FERRY_REQUIRE_FINITE(o.inner_lr_scale, >, 0, "--algo ", r.name(), ": inner_lr_scale");
  if (streaming) {
    o.fragments = r.get_int("fragments", 4);
    o.overlap = r.get_int("overlap", 1);
    o.alpha = r.get_double("alpha", 0.5);
    FERRY_REQUIRE_GE(o.fragments, 1, "--algo ", r.name(), ": fragments");
    FERRY_REQUIRE(o.fragments <= o.inner_steps, "--algo ", r.name(), ": fragments (", o.fragments,
                  ") must be at most inner_steps (", o.inner_steps, "): each needs its own step of the window");
    FERRY_REQUIRE(o.overlap >= 0 && o.overlap < o.inner_steps, "--algo ", r.name(),
                  ": overlap must be in [0, inner_steps), got ", o.overlap, " with inner_steps ", o.inner_steps);
    FERRY_REQUIRE_IN(o.alpha, 0, 1, "[]", "--algo ", r.name(), ": alpha");
  }
  return o;
}

DilocoOptions DilocoOptions::of_spec(const std::string& algo_spec) {
  return read_algo_spec(algo_spec, [](SpecReader& r) { return read(r, r.name() == "streaming-diloco"); });
}

std::vector<std::size_t> fragment_cuts(const std::vector<std::size_t>& numels, std::int64_t fragments,
                                       const std::string& algo) {
  const std::size_t tensors = numels.size();
  const std::size_t p_count = static_cast<std::size_t>(fragments);
  FERRY_REQUIRE(p_count <= tensors, "--algo ", algo, ": fragments (", p_count, ") must be at most the model's ",
                tensors, " tensors");
  double n = 0;
  for (std::size_t e : numels) n += static_cast<double>(e);
  std::vector<std::size_t> cuts{0};
  std::size_t t = 0;
  double running = 0;
  for (std::size_t p = 1; p < p_count; ++p) {
    const double share = n * static_cast<double>(p) / static_cast<double>(p_count);
    // At least one tensor per fragment, and one left for every later fragment.
    do running += static_cast<double>(numels[t++]);
    while (t < tensors - (p_count - p) && running < share);
    cuts.push_back(t);
  }
  cuts.push_back(tensors);
  return cuts;
}

}  // namespace ferry::train
