// ferry._C's half of the DDP communication hook (python/ferry/torch/hooks.py): the whole exchange
// of a bucket in C++ (train/bucket_averager.h, the exchange `ferry train` uses), over two Python
// callables that are the transport: allreduce(float32 tensor) sums in place over the workers,
// allgather(uint8 tensor) returns every worker's bytes in rank order. The hook passes callables of
// torch.distributed's process group or of ferry's workers; what to send, over which collective,
// how to decode and sum and in which order is decided here. The identity codec's bucket is
// allreduced as it is (any dtype and device, as DDP's default hook does) and divided by the number
// of workers.
#include <torch/extension.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <pybind11/stl.h>

#include "compress/codec_registry.h"
#include "core/error.h"
#include "train/bucket_averager.h"

namespace py = pybind11;

namespace {

at::Tensor bytes_tensor(std::span<const std::byte> bytes) {
  at::Tensor t = at::empty({static_cast<std::int64_t>(bytes.size())}, at::kByte);
  if (!bytes.empty()) std::memcpy(t.data_ptr(), bytes.data(), bytes.size());
  return t;
}

// The transport the hook's callables make, for one exchange on the hook's thread: each call
// takes the GIL, which the exchange itself does not hold.
ferry::train::BucketCollectives python_collectives(std::size_t world, const py::function& allreduce,
                                               const py::function& allgather) {
  ferry::train::BucketCollectives net;
  net.world_size = world;
  net.message_name = "the DDP hook's message of worker";
  // The callables outlive the exchange: they are the arguments of the call that runs it.
  net.allreduce_sum = [&allreduce](std::span<float> x) {
    py::gil_scoped_acquire gil;
    allreduce(at::from_blob(x.data(), {static_cast<std::int64_t>(x.size())}, at::kFloat));
  };
  net.allgather = [&allgather, world](std::span<const std::byte> mine) {
    py::gil_scoped_acquire gil;
    const auto all = allgather(bytes_tensor(mine)).cast<std::vector<at::Tensor>>();
    FERRY_REQUIRE(all.size() == world, "allgather: returned ", all.size(), " messages for ", world, " workers");
    std::vector<std::vector<std::byte>> out;
    for (const at::Tensor& t : all) {
      FERRY_REQUIRE(t.scalar_type() == at::kByte && t.dim() == 1 && t.device().is_cpu(),
                    "allgather: expected 1-D uint8 CPU tensors, got ", t.scalar_type(), " of shape ", t.sizes(), " on ",
                    t.device());
      const at::Tensor c = t.contiguous();
      const auto* p = static_cast<const std::byte*>(c.data_ptr());
      out.emplace_back(p, p + c.nbytes());
    }
    return out;
  };
  return net;
}

// One bucket taken by the hook, averaged by average() on the hook's thread.
class PyHookBucket {
 public:
  PyHookBucket(at::Tensor buffer, std::vector<at::Tensor> grads, std::vector<ferry::compress::Codec*> codecs,
               std::shared_ptr<ferry::train::BucketAverager> averager)
      : buffer_(std::move(buffer)), grads_(std::move(grads)), codecs_(std::move(codecs)), averager_(std::move(averager)) {}

  // The bucket's average over the `world` workers, shaped as its buffer: the buffer itself for
  // the identity codec, a new tensor otherwise.
  at::Tensor average(std::size_t world, const py::function& allreduce, const py::function& allgather) {
    if (!averager_) {
      allreduce(buffer_);
      return buffer_.div_(static_cast<std::int64_t>(world));
    }
    const ferry::train::BucketCollectives net = python_collectives(world, allreduce, allgather);
    py::gil_scoped_release release;
    std::int64_t total = 0;
    for (const at::Tensor& g : grads_) total += g.numel();
    at::Tensor flat = at::empty({total}, at::kFloat);
    std::int64_t offset = 0;
    for (const at::Tensor& g : grads_) {
      flat.narrow(0, offset, g.numel()).copy_(g.reshape({-1}));
      offset += g.numel();
    }
    averager_->average(net, codecs_, std::span<float>(flat.data_ptr<float>(), static_cast<std::size_t>(total)));
    return flat.view_as(buffer_);
  }

 private:
  at::Tensor buffer_;
  std::vector<at::Tensor> grads_;
  std::vector<ferry::compress::Codec*> codecs_;  // averager_'s, valid while it lives
  std::shared_ptr<ferry::train::BucketAverager> averager_;  // null for the identity codec
};

// The hook's codecs: one per parameter, over the life of the hook.
class PyDdpHook {
 public:
  explicit PyDdpHook(const std::string& spec) {
    if (!ferry::compress::codec_entry(spec).identity) averager_ = std::make_shared<ferry::train::BucketAverager>(spec);
  }

  // Takes DDP's bucket on worker `rank`: checks its gradients and finds their parameters' codecs.
  PyHookBucket take(at::Tensor buffer, const std::vector<at::Tensor>& params, std::vector<at::Tensor> grads, int rank) {
    if (!averager_) return PyHookBucket(std::move(buffer), {}, {}, nullptr);
    FERRY_REQUIRE(params.size() == grads.size(), "ferry codec hook: a bucket of ", params.size(), " parameters and ",
                  grads.size(), " gradients");
    std::vector<ferry::compress::Codec*> codecs;
    for (std::size_t i = 0; i < grads.size(); ++i) {
      const at::Tensor& g = grads[i];
      FERRY_REQUIRE(g.scalar_type() == at::kFloat && g.device().is_cpu(),
                    "ferry codec hook: expected float32 CPU gradients, got ", g.scalar_type(), " on ", g.device());
      FERRY_REQUIRE(g.numel() == params[i].numel(), "ferry codec hook: a gradient of ", g.numel(),
                    " elements for a parameter of ", params[i].numel());
      const auto key = reinterpret_cast<std::uintptr_t>(params[i].unsafeGetTensorImpl());
      codecs.push_back(averager_->codec_of(key, params[i].sizes().vec(), rank));
    }
    return PyHookBucket(std::move(buffer), std::move(grads), std::move(codecs), averager_);
  }

 private:
  std::shared_ptr<ferry::train::BucketAverager> averager_;  // null for the identity codec
};

}  // namespace

void bind_ddp_hook(py::module_& m) {
  py::class_<PyHookBucket>(m, "DdpHookBucket")
      .def("average", &PyHookBucket::average, py::arg("world"), py::arg("allreduce"), py::arg("allgather"));
  py::class_<PyDdpHook>(m, "DdpHook")
      .def(py::init<const std::string&>(), py::arg("spec"))
      .def("take", &PyDdpHook::take, py::arg("buffer"), py::arg("parameters"), py::arg("gradients"), py::arg("rank"));
}
