// The one table of the global training options: a row per TrainOptions field with its flag, JSON
// key, help text and the places it appears. Everything those places hold is made from it: the
// flags of `ferry train` and those `ferry compare` passes on (apps/train_flags.cc), the keywords of
// the Python DistributedOptimizer (python/), the job sent to the parameter servers (train_job.h),
// the configuration checkpoints record and summary.json (run_summary.h).
//
// Adding an option: a field in TrainOptions (train_options.h) and its row in
// train_option_fields.cc; then the code that reads it (docs/training.md, "Adding an option").
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "comm/link/link_options.h"
#include "train/train_options.h"

namespace ferry::train {

// Where an option appears (a row's `places` is a set of them).
enum class OptionPlace : unsigned {
  kFlag = 1u << 0,     // a flag of `ferry train`
  kCompare = 1u << 1,  // a flag `ferry compare` passes on to its runs (with kFlag)
  kConfig = 1u << 2,   // the configuration checkpoints record and a resume is checked against (job_config())
  kJob = 1u << 3,      // the job worker 0 sends the parameter servers (TrainJob::to_json)
  kSummary = 1u << 4,  // summary.json
  kPython = 1u << 5,   // a keyword of ferry.torch.DistributedOptimizer: the flag without "--", '_' for '-'
};
constexpr unsigned operator|(OptionPlace a, OptionPlace b) { return unsigned(a) | unsigned(b); }
constexpr unsigned operator|(unsigned a, OptionPlace b) { return a | unsigned(b); }

// How the flag takes its value.
enum class FlagForm {
  kValue,          // --lr 0.1
  kSwitch,         // --deterministic (a bool set true)
  kNegatedSwitch,  // --no-progress (a bool set false)
  kOptionalValue,  // --compress-pull [SPEC]: alone it sets "" (the front end gives it its meaning)
};

// The field a row stands for; std::monostate for a flag whose parse function sets the fields.
using OptionMember =
    std::variant<std::monostate, std::string TrainOptions::*, bool TrainOptions::*, int TrainOptions::*,
                 std::int64_t TrainOptions::*, std::uint64_t TrainOptions::*, float TrainOptions::*,
                 double TrainOptions::*, comm::LinkOptions TrainOptions::*>;

struct OptionField {
  const char* key;   // JSON key (job, checkpoint configuration, summary.json)
  const char* flag;  // "--np"; also the Python keyword ("np") where the row has kPython
  const char* help;  // the flag's help text
  unsigned places;   // OptionPlace bits
  OptionMember member;
  FlagForm form = FlagForm::kValue;
  // The names --help lists after `help` (a registry's: strategies, models, codecs); may be empty.
  std::vector<std::string> (*choices)() = nullptr;
  // For a flag whose text is parsed into several fields (--inject-nan-at); InvalidArgument naming it.
  void (*parse)(const std::string& text, TrainOptions& options) = nullptr;
  // How summary.json writes the field's empty value ("fp32" for pulls without a codec).
  const char* summary_empty = nullptr;
  // The default --help shows when the field's own default stands for others ("0.05 (sgd), 4e-4
  // (adamw)" for --lr, whose 0 means the optimizer's); nullptr: the field's value.
  const char* shown_default = nullptr;

  bool in(OptionPlace place) const { return (places & unsigned(place)) != 0; }
  // The flag without its dashes, '-' as '_': the Python keyword.
  std::string keyword() const;
};

// Every row, in --help order.
std::span<const OptionField> train_option_fields();

// Calls fn(options.*member) with the field row `f` stands for (typed: a std::string&, an int&,
// ...); does nothing for a row without one (a flag whose parse function sets the fields).
template <class Options, class Fn>
void with_field(const OptionField& f, Options& options, Fn&& fn) {
  std::visit(
      [&](auto member) {
        if constexpr (!std::is_same_v<decltype(member), std::monostate>) fn(options.*member);
      },
      f.member);
}

// The fields of `place` (kConfig, kJob or kSummary) as JSON: a link as <key>_bytes_per_s and
// <key>_latency_s in the job and the configuration, as its description ("1 Gbps, 50 us") in the
// summary.
nlohmann::json options_json(const TrainOptions& options, OptionPlace place);
// The job's fields back from options_json(.., kJob); FormatError naming a missing or mistyped key.
void read_job_options(const nlohmann::json& job, TrainOptions& options);

// The Python keywords (rows with kPython), for the wrapper to tell them from the algorithm's keys.
std::vector<std::string> option_keywords();
// Sets the options given as Python keywords ({"codec": "twobit", "keep_checkpoints": 3, "link":
// "1Gbps"}); InvalidArgument naming an unknown keyword or a value of the wrong type.
void apply_keywords(const nlohmann::json& keywords, TrainOptions& options);

}  // namespace ferry::train
