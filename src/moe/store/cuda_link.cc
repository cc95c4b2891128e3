// The CUDA link (compiled only with a CUDA libtorch and FERRY_WITH_CUDA_LINK): each transfer
// stages the expert in pinned host memory and copies it to the device on the link's own CUDA
// stream, chunk by chunk, with an event per chunk, so compute on the default stream is never
// blocked by a copy and a cancel takes effect at the next chunk. `dst` must be device memory.
//
// Not compiled on the development machines (no CUDA libtorch there); the engine's compute path
// is the CPU one, so this link is the transfer half of the CUDA backend only.
#include <algorithm>
#include <cstring>

#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>

#include "core/error.h"
#include "core/units.h"
#include "moe/store/host_pool.h"
#include "moe/store/link.h"

namespace ferry::moe {
namespace {

// Pinned host memory (cudaHostAlloc / cudaFreeHost). Move-only.
class PinnedBuffer {
 public:
  explicit PinnedBuffer(std::size_t bytes) : bytes_(bytes) {
    if (cudaHostAlloc(&ptr_, bytes, cudaHostAllocDefault) != cudaSuccess)
      FERRY_THROW(IoError, "cudaHostAlloc of ", bytes, " bytes failed");
  }
  ~PinnedBuffer() {
    if (ptr_) cudaFreeHost(ptr_);
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  std::byte* data() const { return static_cast<std::byte*>(ptr_); }
  std::size_t size() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_;
};

class CudaLink : public Link {
 public:
  CudaLink(const LinkSpec& spec, const HostPool* pool)
      : spec_(spec), pool_(pool), stream_(c10::cuda::getStreamFromPool(/*isHighPriority=*/false)),
        staging_(2 * std::max<std::uint64_t>(spec.chunk_bytes, 1 << 16)) {
    FERRY_REQUIRE(pool_ != nullptr, "the cuda link needs the host pool");
  }

  std::uint64_t transfer(ExpertId id, std::byte* dst, std::uint64_t from, const std::atomic<bool>& stop) override {
    const auto* src = reinterpret_cast<const std::byte*>(pool_->expert(id));
    const std::uint64_t total = pool_->expert_bytes(id), chunk = staging_.size() / 2;
    at::cuda::CUDAEvent done[2];
    const std::uint64_t start = std::min(from, total);
    std::uint64_t moved = start;
    for (int half = 0; moved < total; half ^= 1) {
      if (stop.load(std::memory_order_relaxed)) break;
      done[half].synchronize();  // the copy that last used this half of the staging buffer is finished
      const std::uint64_t n = std::min(chunk, total - moved);
      std::memcpy(staging_.data() + half * chunk, src + moved, n);
      if (cudaMemcpyAsync(dst + moved, staging_.data() + half * chunk, n, cudaMemcpyHostToDevice, stream_.stream()) !=
          cudaSuccess)
        FERRY_THROW(IoError, "cudaMemcpyAsync of expert ", id.layer, "/", id.expert, " failed");
      done[half].record(stream_);
      moved += n;
    }
    stream_.synchronize();
    return moved - start;
  }

  double estimate_s(std::uint64_t bytes) const override {
    return spec_.latency_s + static_cast<double>(bytes) / spec_.bandwidth_bytes_per_s;
  }
  std::string describe() const override { return "cuda (copy stream, pinned staging)"; }

 private:
  LinkSpec spec_;
  const HostPool* pool_;  // owned by the engine, outlives the link
  c10::cuda::CUDAStream stream_;
  PinnedBuffer staging_;
};

}  // namespace

std::unique_ptr<Link> make_cuda_link(const LinkSpec& spec, const LinkSource& source) {
  return std::make_unique<CudaLink>(spec, source.pool);
}

}  // namespace ferry::moe
