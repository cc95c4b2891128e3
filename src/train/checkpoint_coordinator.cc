#include "train/checkpoint_coordinator.h"

#include <torch/nn/module.h>

#include <cstring>
#include <span>

#include "comm/message_tags.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/metrics.h"
#include "train/checkpoint.h"

namespace ferry::train {
namespace {

// A module's buffers (batch norm's running mean and variance, float; its batch counter, int64) as
// records "buffer.<name>". Parameters are the strategy's; buffers are each worker's own.
void save_buffers(StateWriter& out, const torch::nn::Module& module) {
  for (const auto& b : module.named_buffers()) {
    const at::Tensor t = b.value().contiguous();
    if (t.scalar_type() == at::kFloat)
      out.put("buffer." + b.key(), std::span<const float>(t.data_ptr<float>(), static_cast<std::size_t>(t.numel())));
    else if (t.scalar_type() == at::kLong && t.numel() == 1)
      out.put_u64("buffer." + b.key(), static_cast<std::uint64_t>(t.item<std::int64_t>()));
    else
      FERRY_THROW(Error, "checkpoint: buffer ", b.key(), " of type ", t.scalar_type(), " cannot be saved");
  }
}

void load_buffers(const StateReader& in, torch::nn::Module& module) {
  torch::NoGradGuard no_grad;
  for (auto& b : module.named_buffers()) {
    const std::string name = "buffer." + b.key();
    if (!in.has(name)) continue;  // a checkpoint of a model without buffers, or an older one
    at::Tensor& t = b.value();
    if (t.scalar_type() == at::kFloat) {
      FERRY_CHECK(t.is_contiguous());
      in.floats_into(name, std::span<float>(t.data_ptr<float>(), static_cast<std::size_t>(t.numel())));
    } else {
      t.fill_(static_cast<std::int64_t>(in.u64(name)));
    }
  }
}

}  // namespace

ResumePoint find_resume_point(const std::string& resume, const nlohmann::json& config, const WorldLayout& world) {
  ResumePoint r;
  if (resume.empty()) return r;
  r.dir = find_checkpoint(resume);
  nlohmann::json meta = read_checkpoint_meta(r.dir);
  check_resumable(meta, config, world, r.dir);
  r.iterations = meta["iterations"].get<std::int64_t>();
  return r;
}

WorkerLoopState load_worker_state(const ResumePoint& resume, int rank, Strategy& strategy, FlatParams& params,
                                  torch::nn::Module* module) {
  StateReader in = StateReader::read_file(worker_state_path(resume.dir, rank));
  FERRY_CHECK(static_cast<std::int64_t>(in.u64("iterations")) == resume.iterations);
  strategy.load_state(in, params);
  if (module) load_buffers(in, *module);
  WorkerLoopState loop;
  loop.loss_ema = in.f64("loss_ema");
  loop.bad_in_row = static_cast<std::int64_t>(in.u64("bad_in_row"));
  return loop;
}

CheckpointCoordinator::CheckpointCoordinator(comm::Communicator& comm, CheckpointPlan plan, std::int64_t start_it)
    : comm_(comm), plan_(std::move(plan)), last_(start_it) {}

double CheckpointCoordinator::save(std::int64_t done, Strategy& strategy, FlatParams& params,
                                   const WorkerLoopState& loop, torch::nn::Module* module) {
  Stopwatch sw;
  StateWriter out;
  strategy.save_state(out, params, done);
  if (module) save_buffers(out, *module);
  out.put_u64("iterations", static_cast<std::uint64_t>(done));
  out.put_f64("loss_ema", loop.loss_ema);
  out.put_u64("bad_in_row", static_cast<std::uint64_t>(loop.bad_in_row));
  const std::string tmp = checkpoint_tmp_dir(plan_.root, done);
  make_dirs(tmp);
  out.write_file(worker_state_path(tmp, plan_.rank));
  auto done_bytes = std::as_bytes(std::span(&done, 1));
  if (plan_.rank != 0) {
    comm_.send(0, comm::kTagTrainCheckpointDone, done_bytes);
  } else {
    for (int w = 1; w < plan_.num_workers; ++w) {
      comm::Message m = comm_.recv(w, comm::kTagTrainCheckpointDone);
      FERRY_CHECK(m.data.size() == sizeof done && std::memcmp(m.data.data(), &done, sizeof done) == 0);
    }
    nlohmann::json meta = {
        {"format", "ferry-checkpoint-1"},
        {"iterations", done},
        {"epoch", done / plan_.steps_per_epoch},
        {"steps_per_epoch", plan_.steps_per_epoch},
        {"world", plan_.world},
        {"config", plan_.config},
    };
    finalize_checkpoint(plan_.root, done, meta, plan_.keep);
  }
  last_ = done;
  const double s = sw.elapsed_s();
  seconds_ += s;
  return s;
}

}  // namespace ferry::train
