// The emulated PCIe link: real memcpy from the host pool into the device buffer, paced so that a
// transfer of n bytes ends no earlier than latency + n / bandwidth after it starts. Chunked, so
// a cancel takes effect within one chunk. Kind "none": the same copy without pacing.
#include <algorithm>
#include <cstring>
#include <sstream>

#include "core/clock.h"
#include "core/error.h"
#include "core/units.h"
#include "moe/store/host_pool.h"
#include "moe/store/link.h"

namespace ferry::moe {
namespace {

class EmulatedLink : public Link {
 public:
  EmulatedLink(const LinkSpec& spec, const HostPool* pool) : spec_(spec), pool_(pool) {
    FERRY_REQUIRE(pool_ != nullptr, "the emulated link needs the host pool");
    FERRY_REQUIRE_POSITIVE(spec_.chunk_bytes, "link chunk size");
  }

  // A resumed transfer pays the latency again (a new copy is started).
  std::uint64_t transfer(ExpertId id, std::byte* dst, std::uint64_t from, const std::atomic<bool>& stop) override {
    const auto* src = reinterpret_cast<const std::byte*>(pool_->expert(id));
    const std::uint64_t total = pool_->expert_bytes(id);
    const double begin = now_s() + spec_.latency_s;
    if (paced()) sleep_until_s(begin);
    const std::uint64_t start = std::min(from, total);
    std::uint64_t done = start;
    while (done < total) {
      if (stop.load(std::memory_order_relaxed)) break;
      const std::uint64_t n = std::min<std::uint64_t>(spec_.chunk_bytes, total - done);
      std::memcpy(dst + done, src + done, n);
      done += n;
      if (paced()) sleep_until_s(begin + static_cast<double>(done - start) / spec_.bandwidth_bytes_per_s);
    }
    return done - start;
  }

  double estimate_s(std::uint64_t bytes) const override {
    return paced() ? spec_.latency_s + static_cast<double>(bytes) / spec_.bandwidth_bytes_per_s : 0.0;
  }

  std::string describe() const override {
    if (!paced()) return "none (unpaced memcpy)";
    std::ostringstream s;
    s << "emulated " << format_bandwidth(spec_.bandwidth_bytes_per_s) << " (" << spec_.bandwidth_bytes_per_s / 1e6
      << " MB/s) + " << format_duration(spec_.latency_s);
    return s.str();
  }

 private:
  bool paced() const { return spec_.bandwidth_bytes_per_s > 0; }  // the "none" kind comes with 0

  LinkSpec spec_;
  const HostPool* pool_;  // owned by the engine, outlives the link
};

}  // namespace

std::unique_ptr<Link> make_emulated_link(const LinkSpec& spec, const LinkSource& source) {
  return std::make_unique<EmulatedLink>(spec, source.pool);
}

}  // namespace ferry::moe
