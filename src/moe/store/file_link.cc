// The file link: experts are read from the checkpoint on disk with O_DIRECT (no page cache), for
// CPU-only machines whose RAM cannot hold every expert. Each of the expert's three tensors is
// read in aligned chunks into an aligned bounce buffer and converted to float32 in place.
// Where the filesystem refuses O_DIRECT (tmpfs), it falls back to buffered reads.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <atomic>
#include <map>
#include <vector>

#include "core/clock.h"
#include "core/error.h"
#include "core/file.h"
#include "core/units.h"
#include "moe/model/checkpoint.h"
#include "moe/store/host_pool.h"
#include "moe/store/link.h"

namespace ferry::moe {
namespace {

constexpr std::uint64_t kAlign = 4096;

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

class FileLink : public Link {
 public:
  FileLink(const LinkSpec& spec, const Checkpoint* ck, const ExpertLayout& layout)
      : spec_(spec), ck_(ck), names_(ck->config()), layout_(layout) {
    FERRY_REQUIRE(ck_ != nullptr, "the file link needs the checkpoint");
    // A safetensors checkpoint holds float experts; a quantized format would be quantized on
    // every transfer. Streaming quantized experts reads them from a GGUF file as stored.
    FERRY_REQUIRE(ck_->gguf() == nullptr, "--link file streams float32 experts from a safetensors checkpoint; the ",
                  "experts of GGUF file '", ck_->dir(), "' need the host pool (another --link)");
    FERRY_REQUIRE(layout_.format == quant::QuantType::kF32 && layout_.down_format == quant::QuantType::kF32,
                  "--link file streams float32 experts from a safetensors checkpoint; experts in ",
                  layout_.format_name(), " need the host pool (another --link)");
    chunk_ = std::max<std::uint64_t>(kAlign, spec.chunk_bytes / kAlign * kAlign);
    void* p = nullptr;
    if (posix_memalign(&p, kAlign, chunk_ + 2 * kAlign) != 0) FERRY_THROW(IoError, "cannot allocate the O_DIRECT buffer");
    bounce_.reset(static_cast<std::byte*>(p));
    for (const auto& f : ck->files()) {
      UniqueFd fd = UniqueFd::try_open(f->path(), O_RDONLY | O_DIRECT);
      direct_ = direct_ && fd.valid();
      if (!fd.valid()) fd = UniqueFd::open(f->path(), O_RDONLY);
      fds_.emplace(f.get(), std::move(fd));
    }
    if (spec_.bandwidth_bytes_per_s <= 0) calibrate();
  }

  // `from` counts float32 bytes delivered, in the order w1, w3, w2; a resumed call skips them.
  std::uint64_t transfer(ExpertId id, std::byte* dst, std::uint64_t from, const std::atomic<bool>& stop) override {
    const double begin = now_s() + spec_.latency_s;
    std::uint64_t moved = 0;    // by this call
    std::uint64_t skipped = 0;  // float32 bytes of earlier tensors (or parts) already delivered
    const int which[3] = {1, 3, 2};
    const std::uint64_t offsets[3] = {layout_.w1_offset(), layout_.w3_offset(), layout_.w2_offset()};
    for (int t = 0; t < 3; ++t) {
      TensorRef ref = ck_->at(names_.expert(ck_->config().decoder_layer(id.layer), id.expert, which[t]));
      const int fd = fds_.at(ref.file).get();
      const std::uint64_t start = ref.file->file_offset(*ref.info), len = ref.info->nbytes();
      const std::size_t esize = dtype_size(ref.info->dtype);
      float* out = reinterpret_cast<float*>(dst + offsets[t]);
      const std::uint64_t out_len = len / esize * 4;
      if (skipped + out_len <= from) {
        skipped += out_len;
        continue;
      }
      std::uint64_t done = from > skipped ? (from - skipped) / 4 * esize : 0;  // bytes of this tensor converted
      skipped = from;
      while (done < len) {
        if (stop.load(std::memory_order_relaxed)) return moved;
        const std::uint64_t want = std::min<std::uint64_t>(chunk_ / esize * esize, len - done);
        const std::uint64_t pos = start + done;
        const std::uint64_t aligned = pos / kAlign * kAlign;
        const std::uint64_t span = (pos - aligned + want + kAlign - 1) / kAlign * kAlign;
        std::uint64_t got = 0;
        while (got < pos - aligned + want) {
          ssize_t r = ::pread(fd, bounce_.get() + got, span - got, static_cast<off_t>(aligned + got));
          if (r < 0 && errno == EINTR) continue;
          if (r <= 0) FERRY_THROW(IoError, "read of '", ref.file->path(), "' at ", aligned + got, " failed: ",
                                  r < 0 ? std::strerror(errno) : "unexpected end of file");
          got += static_cast<std::uint64_t>(r);
        }
        convert_to_f32(ref.info->dtype, bounce_.get() + (pos - aligned), out + done / esize, want / esize);
        done += want;
        moved += want / esize * 4;
        if (spec_.bandwidth_bytes_per_s > 0)
          sleep_until_s(begin + static_cast<double>(moved) / spec_.bandwidth_bytes_per_s);
      }
    }
    return moved;
  }

  double estimate_s(std::uint64_t bytes) const override {
    if (spec_.bandwidth_bytes_per_s > 0) return spec_.latency_s + static_cast<double>(bytes) / spec_.bandwidth_bytes_per_s;
    return static_cast<double>(bytes) * measured_s_per_byte_;  // unpaced: what this disk did at open
  }

  std::string describe() const override {
    std::string s = std::string("file (") + (direct_ ? "O_DIRECT" : "buffered: O_DIRECT refused") + ")";
    if (spec_.bandwidth_bytes_per_s <= 0)
      s += ", measured " + format_bandwidth(1.0 / std::max(1e-15, measured_s_per_byte_)) + " into float32";
    if (spec_.bandwidth_bytes_per_s > 0) s += " paced to " + format_bandwidth(spec_.bandwidth_bytes_per_s);
    return s;
  }

 private:
  LinkSpec spec_;
  const Checkpoint* ck_;  // owned by the engine, outlives the link
  TensorNames names_;
  ExpertLayout layout_;
  std::uint64_t chunk_ = 0;
  bool direct_ = true;
  double measured_s_per_byte_ = 0;  // unpaced: seconds per float32 byte delivered, timed at open
  std::unique_ptr<std::byte, FreeDeleter> bounce_;
  std::map<const SafetensorsFile*, UniqueFd> fds_;

  // The policies' transfer cost on an unpaced link is this disk's: two experts read (and
  // converted) at open, as every transfer will be.
  void calibrate() {
    const ExpertLayout& L = layout_;
    std::vector<float> scratch(static_cast<std::size_t>(L.params()));
    const std::atomic<bool> never(false);
    const int n = std::min(2, ck_->config().num_experts);
    const double t0 = now_s();
    std::uint64_t bytes = 0;
    for (int e = 0; e < n; ++e) bytes += transfer({0, e}, reinterpret_cast<std::byte*>(scratch.data()), 0, never);
    measured_s_per_byte_ = (now_s() - t0) / static_cast<double>(std::max<std::uint64_t>(1, bytes));
  }
};

}  // namespace

std::unique_ptr<Link> make_file_link(const LinkSpec& spec, const LinkSource& source) {
  FERRY_REQUIRE(source.checkpoint != nullptr, "--link file needs a checkpoint on disk");
  FERRY_REQUIRE(source.pool != nullptr, "--link file needs the host pool's layout");
  return std::make_unique<FileLink>(spec, source.checkpoint, source.pool->layout());
}

}  // namespace ferry::moe
