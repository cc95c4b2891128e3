// ferry._C: the C++ half of the Python package (python/ferry). It holds the process's MPI runtime
// and two communicators (the whole world, and this rank's side: the workers or the servers), and
// hands Python tensors to ferry's DistributedOptimizer with no copy. ferry's InvalidArgument and
// FormatError arrive in Python as ValueError, IoError as OSError, anything else as RuntimeError
// (pybind11 translates std::exception), each with ferry's message.
#include <torch/extension.h>

#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>
#include <pybind11/stl.h>

#include "comm/link/link_options.h"
#include "comm/link/shaped_communicator.h"
#include "comm/mpi/mpi_communicator.h"
#include "compress/codec_registry.h"
#include "core/error.h"
#include "core/plugin.h"
#include "train/distributed_optimizer.h"
#include "train/strategy.h"
#include "train/train_option_fields.h"

namespace py = pybind11;
using ferry::comm::MpiCommunicator;
using ferry::comm::MpiRuntime;
using ferry::train::DistributedOptimizer;
using ferry::train::DistributedOptimizerOptions;

namespace {

struct Runtime {
  std::unique_ptr<MpiRuntime> mpi;
  std::unique_ptr<MpiCommunicator> world;  // every rank
  std::unique_ptr<MpiCommunicator> side;   // the workers among themselves, or the servers
  // The workers' collectives through an emulated link, by link spec (the DDP hook's transport).
  std::map<std::string, std::unique_ptr<ferry::comm::Communicator>> linked;
  int num_servers = 0;
  bool announced = false;  // worker 0 told the servers which job comes (or that none does)
};

Runtime& runtime() {
  static Runtime r;
  return r;
}

Runtime& initialised() {
  Runtime& r = runtime();
  FERRY_REQUIRE(r.world != nullptr, "ferry is not initialised: call ferry.init() first");
  return r;
}

bool is_server_rank(const Runtime& r) { return r.world->rank() >= r.world->size() - r.num_servers; }

void init(int num_servers) {
  Runtime& r = runtime();
  if (r.world) {
    FERRY_REQUIRE(num_servers == r.num_servers, "ferry.init(): already initialised with ", r.num_servers,
                  " servers, now asked for ", num_servers);
    return;
  }
  r.mpi = std::make_unique<MpiRuntime>(nullptr, nullptr);
  const ferry::comm::MpiWait wait = ferry::comm::mpi_wait_from_environment();
  r.world = std::make_unique<MpiCommunicator>(wait);
  FERRY_REQUIRE(num_servers >= 0 && num_servers < r.world->size(), "ferry.init(): servers=", num_servers,
                " leaves no worker in a world of ", r.world->size(), " ranks");
  r.num_servers = num_servers;
  r.side = std::make_unique<MpiCommunicator>(is_server_rank(r) ? 1 : 0, wait);
}

void shutdown() {
  Runtime& r = runtime();
  if (!r.world) return;
  // Worker 0 tells the servers that no job comes if it never announced one, so that they exit.
  if (!is_server_rank(r) && r.world->rank() == 0 && r.num_servers > 0 && !r.announced)
    DistributedOptimizer::announce_no_job(r.world.get(), r.num_servers);
  r.announced = true;
  r.linked.clear();
  r.side.reset();
  r.world.reset();
  r.mpi.reset();  // MPI_Finalize
}

// The parameter-server ranks' whole life: serve the job worker 0 announces, until it ends.
bool serve() {
  Runtime& r = initialised();
  FERRY_REQUIRE(is_server_rank(r), "serve() is for parameter-server ranks");
  py::gil_scoped_release release;
  return DistributedOptimizer::serve_announced_job(r.world.get(), r.num_servers);
}

// The worker-side optimizer over Python tensors (shared storage: FlatParams rebinds them).
class PyOptimizer {
 public:
  // `keywords`: the Python keywords of ferry train's options (train_option_fields.h) as JSON;
  // `sgd`: the wrapped torch.optim.SGD's lr, momentum and weight decay (none with an external optimizer).
  PyOptimizer(std::vector<at::Tensor> params, const std::string& keywords,
              const std::optional<std::tuple<float, float, float>>& sgd, bool external_optimizer) {
    Runtime& r = initialised();
    FERRY_REQUIRE(!is_server_rank(r), "a DistributedOptimizer is built on worker ranks only");
    ferry::train::register_builtin_strategies();
    FERRY_REQUIRE(!r.announced, "one DistributedOptimizer per job: the servers serve the first one");
    DistributedOptimizerOptions o{.external_optimizer = external_optimizer};
    ferry::train::apply_keywords(nlohmann::json::parse(keywords), o.train);
    if (sgd) std::tie(o.train.lr, o.train.momentum, o.train.weight_decay) = *sgd;
    o.train.num_servers = r.num_servers;  // the servers ferry.init() started
    const bool ps = ferry::train::resolve_topology(ferry::train::strategy_info(o.train.algo), o.train.topology) ==
                    ferry::train::Topology::kParameterServer;
    // Allreduce algorithms run among the workers only; the ps ones over the world (servers included).
    if (!ps) o.train.num_servers = 0;
    ferry::comm::Communicator* comm = ps ? r.world.get() : r.side.get();
    py::gil_scoped_release release;
    optimizer_ = std::make_unique<DistributedOptimizer>(std::move(params), comm, o, /*announce_to_servers=*/ps);
    if (ps) r.announced = true;
  }
  void zero_grad() { optimizer_->zero_grad(); }
  void step() {
    py::gil_scoped_release release;
    optimizer_->step();
  }
  void finish() {
    py::gil_scoped_release release;
    optimizer_->finish();
  }
  std::string save_checkpoint() {
    py::gil_scoped_release release;
    return optimizer_->save_checkpoint();
  }
  std::int64_t iterations() const { return optimizer_->iterations(); }
  // wfbp's per-layer gate, taken by the Python layer's forward pre-hooks; false without one.
  bool take_layer_gate() {
    gate_ = optimizer_->take_layer_gate();
    return static_cast<bool>(gate_);
  }
  void gate(std::size_t first, std::size_t count) {
    FERRY_REQUIRE(gate_, "gate(): no layer gate was taken");
    py::gil_scoped_release release;
    gate_(first, count);
  }
  double comm_wait_s() const { return optimizer_->comm_wait_s(); }
  std::uint64_t bytes_sent() const { return optimizer_->bytes_sent(); }
  std::string codec() const { return optimizer_->codec(); }
  std::string algo() const { return optimizer_->algo(); }
  // The job's options, resolved, as JSON (those the job carries: train_option_fields.h, kJob).
  std::string options() const {
    return ferry::train::options_json(optimizer_->options(), ferry::train::OptionPlace::kJob).dump();
  }

 private:
  std::unique_ptr<DistributedOptimizer> optimizer_;
  std::function<void(std::size_t, std::size_t)> gate_;
};

// Collectives among the workers (the servers take no part).
ferry::comm::Communicator& workers() {
  Runtime& r = initialised();
  FERRY_REQUIRE(!is_server_rank(r), "collectives are for worker ranks");
  return *r.side;
}

// The workers' communicator seen through the emulated link `link` ("" or "none": none).
ferry::comm::Communicator& workers(const std::string& link) {
  ferry::comm::Communicator& plain = workers();
  if (link.empty() || link == "none") return plain;
  Runtime& r = runtime();
  auto it = r.linked.find(link);
  if (it == r.linked.end())
    it = r.linked.emplace(link, std::make_unique<ferry::comm::ShapedCommunicator>(&plain, ferry::comm::parse_link_spec(link)))
             .first;
  return *it->second;
}

void allreduce_sum_(at::Tensor t, const std::string& link) {
  FERRY_REQUIRE(t.is_contiguous() && t.device().is_cpu(), "allreduce: expected a contiguous CPU tensor");
  auto& c = workers(link);
  py::gil_scoped_release release;
  if (t.scalar_type() == at::kFloat) {
    c.allreduce_sum(std::span<float>(t.data_ptr<float>(), static_cast<std::size_t>(t.numel())));
  } else if (t.scalar_type() == at::kDouble) {
    c.allreduce_sum(std::span<double>(t.data_ptr<double>(), static_cast<std::size_t>(t.numel())));
  } else {
    FERRY_THROW(ferry::InvalidArgument, "allreduce: expected a float32 or float64 tensor, got ", t.scalar_type());
  }
}

// Every worker's uint8 payload (of any size), in rank order.
std::vector<at::Tensor> allgather_bytes(const at::Tensor& t, const std::string& link) {
  FERRY_REQUIRE(t.scalar_type() == at::kByte && t.is_contiguous() && t.device().is_cpu(),
                "allgather: expected a contiguous uint8 CPU tensor");
  auto& c = workers(link);
  std::vector<std::vector<std::byte>> all;
  {
    py::gil_scoped_release release;
    all = c.allgather(std::span<const std::byte>(static_cast<const std::byte*>(t.data_ptr()), t.nbytes()));
  }
  std::vector<at::Tensor> out;
  for (const auto& bytes : all) {
    at::Tensor x = at::empty({static_cast<std::int64_t>(bytes.size())}, at::kByte);
    if (!bytes.empty()) std::memcpy(x.data_ptr(), bytes.data(), bytes.size());
    out.push_back(x);
  }
  return out;
}

std::uint64_t link_bytes_sent(const std::string& link) { return workers(link).counters().bytes_sent; }

void broadcast_(at::Tensor t, int root) {
  FERRY_REQUIRE(t.is_contiguous() && t.device().is_cpu(), "broadcast: expected a contiguous CPU tensor");
  auto& c = workers();
  FERRY_REQUIRE(root >= 0 && root < c.size(), "broadcast: root_rank ", root, " is not a worker (0..", c.size() - 1,
                ")");
  py::gil_scoped_release release;
  c.broadcast(std::span<std::byte>(static_cast<std::byte*>(t.data_ptr()), t.nbytes()), root);
}

}  // namespace

void bind_data(py::module_& m);       // data_bindings.cc
void bind_ddp_hook(py::module_& m);  // ddp_hook_bindings.cc

PYBIND11_MODULE(_C, m) {
  m.doc() = "ferry's C++ core (python/ferry wraps it)";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ferry::InvalidArgument& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const ferry::FormatError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const ferry::IoError& e) {
      PyErr_SetString(PyExc_OSError, e.what());
    }
  });

  m.def("init", &init, py::arg("num_servers"));
  m.def("shutdown", &shutdown);
  m.def("initialised", [] { return runtime().world != nullptr; });
  m.def("load_plugin", &ferry::load_plugin, py::arg("path"));
  m.def("world_rank", [] { return initialised().world->rank(); });
  m.def("world_size", [] { return initialised().world->size(); });
  m.def("num_servers", [] { return initialised().num_servers; });
  m.def("is_server", [] { return is_server_rank(initialised()); });
  m.def("side_rank", [] { return initialised().side->rank(); });
  m.def("side_size", [] { return initialised().side->size(); });
  m.def("serve", &serve);
  m.def("abort", [](int code) { ferry::comm::mpi_abort(code); });
  m.def("allreduce_sum_", &allreduce_sum_, py::arg("tensor"), py::arg("link") = "");
  m.def("allgather_bytes", &allgather_bytes, py::arg("tensor"), py::arg("link") = "");
  m.def("link_bytes_sent", &link_bytes_sent, py::arg("link"));
  m.def("broadcast_", &broadcast_, py::arg("tensor"), py::arg("root"));
  m.def("strategy_names", [] {
    ferry::train::register_builtin_strategies();
    return ferry::train::strategy_names();
  });
  m.def("takes_external_optimizer", [](const std::string& algo) {
    ferry::train::register_builtin_strategies();
    return ferry::train::strategy_info(algo).external_optimizer;
  });
  m.def("option_keywords", &ferry::train::option_keywords);

  bind_data(m);
  bind_ddp_hook(m);

  m.def("codec_names", &ferry::compress::codec_names);
  m.def("canonical_codec_spec", [](const std::string& spec) { return ferry::compress::canonical_codec_spec(spec); });
  m.def("canonical_codec_spec_on_aggregate",
        [](const std::string& spec) { return ferry::compress::canonical_codec_spec_on_aggregate(spec); });
  m.def("codec_is_identity", [](const std::string& spec) { return ferry::compress::codec_entry(spec).identity; },
        py::arg("spec"));

  py::class_<PyOptimizer>(m, "Optimizer")
      .def(py::init<std::vector<at::Tensor>, const std::string&, const std::optional<std::tuple<float, float, float>>&,
                    bool>(),
           py::arg("params"), py::arg("keywords"), py::arg("sgd"), py::arg("external_optimizer"))
      .def("zero_grad", &PyOptimizer::zero_grad)
      .def("step", &PyOptimizer::step)
      .def("finish", &PyOptimizer::finish)
      .def("save_checkpoint", &PyOptimizer::save_checkpoint)
      .def("iterations", &PyOptimizer::iterations)
      .def("take_layer_gate", &PyOptimizer::take_layer_gate)
      .def("gate", &PyOptimizer::gate)
      .def("comm_wait_s", &PyOptimizer::comm_wait_s)
      .def("bytes_sent", &PyOptimizer::bytes_sent)
      .def("codec", &PyOptimizer::codec)
      .def("algo", &PyOptimizer::algo)
      .def("options", &PyOptimizer::options);
}
