// Everything one `ferry train` run is made of; the CLI fills it, tests fill it. Each field has its
// row in train_option_fields.cc (flag, JSON key, Python keyword, help, where it appears): a new
// option is a field here and a row there.
#pragma once

#include <cstdint>
#include <string>

#include "comm/link/link_options.h"
#include "train/strategy.h"

namespace ferry::train {

struct TrainOptions {
  std::string algo = "ssgd";        // strategy name (ssgd, asgd, ...)
  std::string topology = "";        // allreduce | ps; empty = the strategy's default
  int num_workers = 4;              // --np: worker ranks
  int num_servers = 0;              // --servers: parameter-server ranks (ps topology)
  std::string model = "cnn";        // mlp | cnn | fcnet
  int epochs = 1;                   // passes over the training set
  std::int64_t max_steps = 0;       // stop after this many iterations per worker; 0 = all epochs
  std::int64_t batch = 64;          // per-worker batch size
  // The optimizer the workers step where the algorithm's update is theirs (optimizer_choice.h):
  // "sgd" or "adamw[:beta1=..,beta2=..,eps=..]"; "" = the algorithm's (adamw for DiLoCo, sgd else).
  std::string optimizer = "";
  float lr = 0.0f;                  // global learning rate; 0 = the optimizer's (0.05 sgd, 4e-4 adamw)
  float momentum = 0.9f;            // SGD momentum
  float weight_decay = -1.0f;       // sgd: L2 coefficient, adamw: decoupled; -1 = the optimizer's (0, 0.1)
  std::string lr_schedule = "constant";  // learning-rate schedule spec (lr_schedule.h)
  comm::LinkOptions link = {};      // emulated NIC of every rank; disabled = raw transport
  std::string codec = "";           // gradient codec spec (docs/compression.md); "" = the algorithm's default
  std::string pull_codec = "";      // --compress-pull: codec of the servers' pull replies; "" = fp32
  std::uint64_t seed = 1;           // model init and data order
  std::string data_dir = "";        // --data; "": the model's default (training_data.h)
  std::int64_t train_limit = 0;     // use only the first N training items; 0 = all
  std::int64_t test_limit = 0;      // evaluate on the first N test items; 0 = all
  bool eval_each_epoch = false;     // evaluate test accuracy after every epoch (rank 0)
  std::int64_t eval_every = 0;      // also evaluate every N iterations; 0 = off
  std::string out_dir = "";         // summary.json and metrics.jsonl; empty = none
  int threads_per_rank = 0;         // libtorch intra-op threads; 0 = cores / ranks (>= 1)
  bool oversubscribe = false;       // allow more than 8 ranks per core or 4 threads per core
  bool progress = true;             // rank 0 draws a progress bar
  // Reliability (docs/reliability.md).
  std::int64_t checkpoint_every = 0;  // write a checkpoint every N iterations and at the end; 0 = never
  std::string checkpoint_dir = "";  // where checkpoints go; empty = <out>/checkpoints
  int keep_checkpoints = 2;         // newest checkpoints kept (older ones are removed)
  std::string resume = "";          // continue from this checkpoint (or the newest one in this directory)
  bool deterministic = false;       // bit-reproducible synchronous runs (one thread, fixed reduction order)
  int max_bad_steps = 10;           // abort after this many non-finite gradients in a row
  double stall_timeout_s = 300;     // abort when a worker makes no progress for this long; 0 = never
  std::int64_t inject_nan_step = -1;  // testing aid: worker 0's gradient is NaN from this iteration...
  std::int64_t inject_nan_count = 1;  // ...for this many iterations
  std::int64_t test_option = 0;     // testing aid: reaches every place an option can; nothing reads it
};

// Whether --deterministic makes `algo` bit-reproducible (its registry entry's `deterministic`:
// the synchronous ones, not asgd). InvalidArgument for an unknown name.
bool supports_determinism(const std::string& algo);
// Parses --inject-nan-at STEP[,COUNT] into options (InvalidArgument naming the flag).
void parse_inject_nan(const std::string& spec, TrainOptions& options);

// The options with the optimizer resolved: --optimizer the algorithm's when not given (canonical),
// --lr and --wd the optimizer's when not given (0 and -1), --lr-schedule canonical with cosine's
// length from --max-steps. InvalidArgument naming --algo, --optimizer or --lr-schedule.
TrainOptions with_optimizer_defaults(const TrainOptions& options);
// Checks the combination of options (with their optimizer defaults); throws InvalidArgument naming
// the offending flag.
void validate(const TrainOptions& options);
// Workers and servers of the run (servers only with the parameter-server topology).
WorldLayout world_layout(const TrainOptions& options);

// The codec as given, or the algorithm's default_codec when none is ("" -> "none" for most).
std::string codec_or_default(const TrainOptions& options);
// The codec spec with every option resolved ("twobit" -> "twobit:threshold=0.5"; "" -> the
// algorithm's default_codec, "none" for most); a bad spec is an InvalidArgument naming --codec.
std::string canonical_codec(const TrainOptions& options);
// The pull codec with error feedback on (gradient_codecs.h, pull_codec_spec), or "" for fp32
// pulls; a bad spec or topology is an InvalidArgument naming --compress-pull.
std::string canonical_pull_codec(const TrainOptions& options);

}  // namespace ferry::train
