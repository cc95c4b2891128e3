#include "advise/codec_cost.h"

#include <algorithm>
#include <memory>
#include <random>

#include "compress/codec_registry.h"
#include "core/clock.h"
#include "core/error.h"
#include "ps/sgd_optimizer.h"
#include "train/worker_momentum.h"

namespace ferry::advise {

CodecCost uncompressed_cost(const std::vector<std::size_t>& numels) {
  CodecCost c;
  double n = 0;
  for (auto v : numels) n += static_cast<double>(v);
  c.push_bytes = c.ring_bytes = 4.0 * n;
  return c;
}

CodecCost measure_codec_cost(const std::string& spec, const std::vector<std::size_t>& numels,
                             const std::vector<std::vector<std::int64_t>>& shapes, const CodecBenchOptions& o) {
  const std::string canonical = compress::canonical_codec_spec(spec);  // InvalidArgument naming the spec
  if (canonical == compress::canonical_codec_spec("none")) {
    CodecCost c = uncompressed_cost(numels);
    c.spec = canonical;
    return c;
  }
  CodecCost c;
  c.spec = canonical;
  c.compressed = true;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, static_cast<float>(o.gradient_scale));
  std::vector<float> grad, acc;
  std::vector<std::byte> payload;
  // The worker's momentum as a run with the default optimizer places it (SGD, momentum 0.9).
  const train::OptimizerSplit split = train::split_optimizer(canonical, ps::SgdOptions{});
  std::size_t total = 0;
  for (auto n : numels) total += n;
  std::unique_ptr<train::WorkerMomentum> momentum;
  if (split.on_worker) {
    momentum = std::make_unique<train::WorkerMomentum>(total, split);
    std::vector<float> flat(total, static_cast<float>(o.gradient_scale));
    momentum->apply(flat, {});  // untimed: first touch of the velocity
    std::vector<double> t;
    for (int r = 0; r < o.repetitions; ++r) {
      const double t0 = now_s();
      momentum->apply(flat, {});
      t.push_back(now_s() - t0);
    }
    c.momentum_s = *std::min_element(t.begin(), t.end());
  }
  std::size_t offset = 0;
  for (std::size_t i = 0; i < numels.size(); ++i) {
    const std::size_t n = numels[i];
    compress::TensorInfo info{n, {}, static_cast<std::uint64_t>(i), 0};
    if (i < shapes.size()) {
      info.param_ndim = shapes[i].size();
      if (shapes[i].size() >= 2) info.shape = shapes[i];
    }
    auto codec = compress::make_codec(canonical, info);
    grad.resize(n);
    acc.assign(n, 0.0f);
    for (auto& g : grad) g = normal(rng);
    // A codec with its own allreduce (PowerSGD) is timed through it, with a sum that counts the
    // floats it would send (one worker's view: the identity).
    double summed = 0, calls = 0;
    const compress::AllreduceSumFn count = [&summed, &calls](std::span<float> x) {
      summed += static_cast<double>(x.size());
      ++calls;
    };
    std::vector<float> probe = grad;
    const bool custom = codec->custom_allreduce(probe, count, 4);
    if (custom) {
      c.custom_allreduce = true;
      std::vector<double> t;
      for (int r = 0; r < o.repetitions; ++r) {
        probe = grad;
        summed = calls = 0;
        const double t0 = now_s();
        codec->custom_allreduce(probe, count, 4);
        t.push_back(now_s() - t0);
      }
      std::sort(t.begin(), t.end());
      c.custom_allreduce_s += t.front();
      c.ring_bytes += 4.0 * summed;
      c.ring_calls += calls;
    }
    // The push path (parameter server) always encodes and decode-adds.
    codec->encode(grad, payload);  // untimed: first-use allocations
    std::vector<double> te, td;
    for (int r = 0; r < o.repetitions; ++r) {
      const double t0 = now_s();
      codec->encode(grad, payload);
      if (momentum) momentum->mask(offset, n, payload);
      const double t1 = now_s();
      codec->decode_add(payload, acc);
      td.push_back(now_s() - t1);
      te.push_back(t1 - t0);
    }
    std::sort(te.begin(), te.end());  // element 0 below: the fastest repetition
    std::sort(td.begin(), td.end());
    c.push_bytes += static_cast<double>(payload.size());
    c.encode_s += te.front();
    c.decode_s += td.front();
    if (!custom) {
      c.allgather_bytes += static_cast<double>(payload.size()) + 8.0;  // the allgather's length prefix
      c.allgather_encode_s += te.front();
      c.allgather_decode_s += td.front();
    }
    offset += n;
  }
  return c;
}

}  // namespace ferry::advise
