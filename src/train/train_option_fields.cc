#include "train/train_option_fields.h"

#include <type_traits>

#include "compress/codec_registry.h"
#include "core/error.h"
#include "train/models/model.h"
#include "train/strategy.h"

namespace ferry::train {
namespace {

// A Python keyword's value of the field's type; InvalidArgument naming the keyword otherwise.
template <class V>
V python_value(const OptionField& f, const nlohmann::json& v) {
  bool fits;
  const char* expected;
  if constexpr (std::is_same_v<V, bool>) {
    fits = v.is_boolean(), expected = "True or False";
  } else if constexpr (std::is_same_v<V, std::string>) {
    fits = v.is_string(), expected = "a string";
  } else if constexpr (std::is_floating_point_v<V>) {
    fits = v.is_number(), expected = "a number";
  } else {
    fits = v.is_number_integer() && (std::is_signed_v<V> || v.is_number_unsigned()), expected = "an int";
  }
  FERRY_REQUIRE(fits, f.keyword(), "=", v.dump(), ": expected ", expected);
  return v.get<V>();
}

}  // namespace

std::string OptionField::keyword() const {
  std::string k = std::string(flag).substr(2);
  for (char& c : k)
    if (c == '-') c = '_';
  return k;
}

std::span<const OptionField> train_option_fields() {
  using P = OptionPlace;
  using T = TrainOptions;
  // What `ferry compare` takes for its runs is also a flag of `ferry train`.
  constexpr unsigned kCompared = P::kFlag | P::kCompare;
  static const OptionField fields[] = {
      {"algo", "--algo",
       "training algorithm, a spec NAME[:KEY=VALUE,...] (e.g. diloco:inner_steps=50; docs/algorithms.md); NAME:",
       kCompared | P::kConfig | P::kJob | P::kSummary | P::kPython, &T::algo, FlagForm::kValue, &strategy_names},
      {"topology", "--topology", "allreduce | ps (default: the algorithm's own)",
       kCompared | P::kConfig | P::kJob | P::kSummary | P::kPython, &T::topology},
      {"np", "--np", "worker ranks", kCompared | P::kConfig | P::kSummary, &T::num_workers},
      {"servers", "--servers", "parameter-server ranks (ps topology)",
       kCompared | P::kConfig | P::kJob | P::kSummary, &T::num_servers},
      {"model", "--model", "NAME:", kCompared | P::kConfig | P::kSummary, &T::model, FlagForm::kValue, &model_names},
      {"epochs", "--epochs", "passes over the training set", kCompared | P::kConfig | P::kSummary, &T::epochs},
      {"max_steps", "--max-steps", "stop after this many iterations (0: all epochs)", kCompared | P::kConfig,
       &T::max_steps},
      {"batch", "--batch", "per-worker batch size",
       kCompared | P::kConfig | P::kJob | P::kSummary | P::kPython, &T::batch},
      {"optimizer", "--optimizer",
       "the workers' optimizer where the update is theirs (ssgd on allreduce, localsgd, diloco's inner one, "
       "streaming-diloco's, compute-only): sgd (MXNet's SGD with momentum) or adamw[:beta1=B1,beta2=B2,eps=E] "
       "(default betas 0.9, 0.95); default: the algorithm's, adamw for diloco and streaming-diloco, sgd for the "
       "others (docs/training.md, \"Optimizers and schedules\")",
       kCompared | P::kConfig | P::kJob | P::kSummary | P::kPython, &T::optimizer},
      {"lr", "--lr", "learning rate (0 stands for the optimizer's; a given --lr wins)",
       kCompared | P::kConfig | P::kJob | P::kSummary, &T::lr, FlagForm::kValue, nullptr, nullptr, nullptr,
       "0.05 (sgd), 4e-4 (adamw)"},
      {"momentum", "--momentum", "SGD momentum (--optimizer sgd)", kCompared | P::kConfig | P::kJob, &T::momentum},
      {"weight_decay", "--wd", "weight decay: sgd's L2 term, adamw's decoupled decay (-1 stands for the optimizer's)",
       kCompared | P::kConfig | P::kJob | P::kSummary, &T::weight_decay, FlagForm::kValue, nullptr, nullptr, nullptr,
       "0 (sgd), 0.1 (adamw)"},
      {"lr_schedule", "--lr-schedule",
       "learning-rate schedule, constant[:warmup_steps=W] or cosine[:warmup_steps=W,min_ratio=R,steps=T]: linear "
       "warm-up over W iterations, then cosine decay to R times --lr at iteration T (default: --max-steps; "
       "R default 0.1); for the optimizer the workers step (see --optimizer)",
       kCompared | P::kConfig | P::kJob | P::kSummary | P::kPython, &T::lr_schedule},
      {"link", "--link", "emulated NIC per rank",
       kCompared | P::kConfig | P::kJob | P::kSummary | P::kPython, &T::link},
      {"codec", "--codec",
       "gradient codec spec NAME[:KEY=VALUE,...], e.g. topk:ratio=0.01 (docs/compression.md; default: the "
       "algorithm's own, none for most); NAME:",
       kCompared | P::kConfig | P::kJob | P::kSummary | P::kPython, &T::codec, FlagForm::kValue, &compress::codec_names},
      {"pull_codec", "--compress-pull",
       "parameter server: compress pull replies too, with SPEC (default: the --codec); pulls are fp32 otherwise, "
       "as in MXNet",
       kCompared | P::kJob | P::kSummary | P::kPython, &T::pull_codec, FlagForm::kOptionalValue,
       nullptr, nullptr, "fp32"},
      {"seed", "--seed", "model init and data order", kCompared | P::kConfig | P::kSummary, &T::seed},
      {"data", "--data",
       "image models: fashion-mnist (default), synthetic, or a folder of MNIST-format IDX or CIFAR-10 binary files; "
       "gpt: python-stdlib (default) or a text file or folder",
       kCompared | P::kConfig, &T::data_dir},
      {"train_limit", "--train-limit", "use only the first N training items", kCompared | P::kConfig, &T::train_limit},
      {"test_limit", "--test-limit", "evaluate on the first N test items", kCompared | P::kConfig, &T::test_limit},
      {"eval_each_epoch", "--eval-each-epoch", "record test accuracy after every epoch", kCompared,
       &T::eval_each_epoch, FlagForm::kSwitch},
      {"eval_every", "--eval-every", "also record test accuracy every N iterations (finer time to target; 0: off)",
       kCompared, &T::eval_every},
      {"threads", "--threads", "libtorch threads per rank (0: cores / ranks)", kCompared, &T::threads_per_rank},
      {"oversubscribe", "--oversubscribe",
       "allow more than 8 ranks per core (--np + --servers) or more than 4 threads per core (--threads)", kCompared,
       &T::oversubscribe, FlagForm::kSwitch},
      {"out", "--out", "directory for summary.json and metrics.jsonl", kCompared, &T::out_dir},
      {"progress", "--no-progress", "no progress bar", unsigned(P::kFlag), &T::progress, FlagForm::kNegatedSwitch},
      // Reliability (docs/reliability.md).
      {"checkpoint_every", "--checkpoint-every", "write a checkpoint every N iterations and at the end (0: never)",
       P::kFlag | P::kConfig | P::kJob, &T::checkpoint_every},
      {"checkpoint_dir", "--checkpoint-dir", "directory of the checkpoints (default: <out>/checkpoints)",
       P::kFlag | P::kPython, &T::checkpoint_dir},
      {"keep_checkpoints", "--keep-checkpoints", "newest checkpoints kept", P::kFlag | P::kJob | P::kPython,
       &T::keep_checkpoints},
      {"resume", "--resume", "continue from this checkpoint, or from the newest one in this directory",
       P::kFlag | P::kPython, &T::resume},
      {"deterministic", "--deterministic", "bit-reproducible synchronous runs: one thread per rank, fixed reduction order",
       P::kFlag | P::kConfig | P::kJob | P::kSummary, &T::deterministic, FlagForm::kSwitch},
      {"stall_timeout", "--stall-timeout", "abort the job when a worker makes no progress for S seconds (0: never)",
       unsigned(P::kFlag), &T::stall_timeout_s},
      {"max_bad_steps", "--max-bad-steps", "abort after this many non-finite gradients in a row",
       P::kFlag | P::kConfig, &T::max_bad_steps},
      {"inject_nan_at", "--inject-nan-at",
       "testing aid: worker 0's loss and gradient are NaN at STEP[,COUNT] iterations", unsigned(P::kFlag),
       std::monostate{}, FlagForm::kValue, nullptr, &parse_inject_nan},
      {"test_option", "--test-option",
       "testing aid: a number carried to the job, the checkpoints' configuration and summary.json; nothing reads it",
       kCompared | P::kConfig | P::kJob | P::kSummary | P::kPython, &T::test_option},
  };
  return fields;
}

nlohmann::json options_json(const TrainOptions& o, OptionPlace place) {
  nlohmann::json out = nlohmann::json::object();
  for (const OptionField& f : train_option_fields()) {
    if (!f.in(place)) continue;
    with_field(f, o, [&](const auto& v) {
      using V = std::decay_t<decltype(v)>;
      if constexpr (std::is_same_v<V, comm::LinkOptions>) {
        if (place == OptionPlace::kSummary) {
          out[f.key] = comm::describe(v);
        } else {
          out[std::string(f.key) + "_bytes_per_s"] = v.bandwidth_bytes_per_s;
          out[std::string(f.key) + "_latency_s"] = v.latency_s;
        }
      } else if constexpr (std::is_same_v<V, std::string>) {
        out[f.key] = place == OptionPlace::kSummary && v.empty() && f.summary_empty ? f.summary_empty : v;
      } else {
        out[f.key] = v;
      }
    });
  }
  return out;
}

void read_job_options(const nlohmann::json& j, TrainOptions& o) {
  try {
    for (const OptionField& f : train_option_fields()) {
      if (!f.in(OptionPlace::kJob)) continue;
      with_field(f, o, [&](auto& v) {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, comm::LinkOptions>)
          v = comm::LinkOptions{j.at(std::string(f.key) + "_bytes_per_s").get<double>(),
                                j.at(std::string(f.key) + "_latency_s").get<double>()};
        else
          v = j.at(f.key).get<V>();
      });
    }
  } catch (const nlohmann::json::exception& e) {
    FERRY_THROW(FormatError, "training job: ", e.what());
  }
}

std::vector<std::string> option_keywords() {
  std::vector<std::string> out;
  for (const OptionField& f : train_option_fields())
    if (f.in(OptionPlace::kPython)) out.push_back(f.keyword());
  return out;
}

void apply_keywords(const nlohmann::json& keywords, TrainOptions& o) {
  FERRY_REQUIRE(keywords.is_object(), "options: expected keyword arguments, got ", keywords.dump());
  for (const auto& [name, value] : keywords.items()) {
    const OptionField* field = nullptr;
    for (const OptionField& f : train_option_fields())
      if (f.in(OptionPlace::kPython) && f.keyword() == name) field = &f;
    if (!field) {
      std::string known;
      for (const auto& k : option_keywords()) known += (known.empty() ? "" : ", ") + k;
      FERRY_THROW(InvalidArgument, "unknown option '", name, "' (known: ", known, ")");
    }
    const OptionField& f = *field;
    if (f.parse) {
      f.parse(python_value<std::string>(f, value), o);
      continue;
    }
    with_field(f, o, [&](auto& v) {
      using V = std::decay_t<decltype(v)>;
      if constexpr (std::is_same_v<V, comm::LinkOptions>)
        v = comm::parse_link_spec(python_value<std::string>(f, value));
      else
        v = python_value<V>(f, value);
    });
  }
}

}  // namespace ferry::train
